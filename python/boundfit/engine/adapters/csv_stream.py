"""bf.data.from_csv: a CSV file streamed one block at a time (pyarrow's
streaming reader): only the columns named are converted, one block of
block_size bytes of text is held with its parsed columns while its rows are
cut into batches (a batch that straddles two blocks is joined). Column types
are inferred from the first block; a later block that does not parse as
them is refused naming the file and the batch. shuffle=True shuffles the
rows within each block (a bounded buffer: the file is read in order and
never held whole). The number of rows is not known before the end: an
epoch runs until the file ends."""

import numpy as np

from ... import utils
from ...errors import DataError
from ..plan import PlanEntry
from . import columns


def csv():
    import pyarrow.csv
    return pyarrow.csv


class CsvBatches:
    """A re-iterable of (x, y[, sample_weight]) batches read from a CSV file."""
    _keeps_order = True

    def __init__(self, path, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None,
                 block_size=1 << 20, delimiter=","):
        for name, v in (("batch_size", batch_size), ("block_size", block_size)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.path, self.batch_size, self.shuffle = str(path), int(batch_size), bool(shuffle)
        self.block_size, self.delimiter = int(block_size), delimiter
        self.spec = columns.Spec(x, y, sample_weight)
        with self._open() as reader:   # the header and the first block: the columns and their types
            self.schema = reader.schema
        self.spec.check(self.schema.names, self.path)
        self.rng = np.random.default_rng(utils.next_seed() if seed is None else seed)
        self._first_bytes = 0

    def _open(self, types=None):
        c = csv()
        opts = c.ConvertOptions(include_columns=self.spec.columns if types is not None else None,
                                column_types=types)
        try:
            return c.open_csv(self.path, read_options=c.ReadOptions(block_size=self.block_size),
                              parse_options=c.ParseOptions(delimiter=self.delimiter), convert_options=opts)
        except (OSError, ValueError) as e:   # ArrowInvalid is a ValueError
            raise DataError(f"{self.path}: not a readable CSV file ({e})") from None

    def plan_entries(self):
        """A block's text and its parsed columns (numbers: 8 bytes a value at most, and a value takes two
        characters at least with its delimiter: 4x the text; a bound), and the batches."""
        return [PlanEntry(f"{self.path}: one block of {self.block_size} bytes read and parsed (bound)",
                          5 * self.block_size, "host", "data", "outside the arena: the streamed source"),
                PlanEntry(f"{self.path}: batches of {self.batch_size} rows (the one being joined and converted, "
                          "the one trained on, the first kept for checks; bound)", 4 * self._first_bytes, "host",
                          "data", "outside the arena: the streamed source")]

    def __iter__(self):
        types = {c: self.schema.field(c).type for c in self.spec.columns}
        pieces, have, k = [], 0, 0
        with self._open(types) as reader:
            while True:
                try:
                    block = reader.read_next_batch()
                except StopIteration:
                    break
                except ValueError as e:   # a block that does not parse as the first block's types
                    raise DataError(f"{self.path}: batch {k}: {e}", batch_index=k) from None
                rows = self.rng.permutation(block.num_rows) if self.shuffle else None
                at = 0
                while at < block.num_rows:
                    take = min(self.batch_size - have, block.num_rows - at)
                    pieces.append(block.slice(at, take) if rows is None else block.take(rows[at:at + take]))
                    have, at = have + take, at + take
                    if have == self.batch_size:
                        yield self._batch(pieces, k)
                        pieces, have, k = [], 0, k + 1
        if have:
            yield self._batch(pieces, k)

    def _batch(self, pieces, k):
        pa = columns.arrow()
        table = pa.Table.from_batches(pieces)
        b = self.spec.batch(table, k)
        if k == 0:
            self._first_bytes = max(self._first_bytes, columns.batch_bytes(b))
        return b

    def __repr__(self):
        return f"from_csv({self.path!r}, batch_size={self.batch_size})"


def from_csv(path, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None, block_size=1 << 20,
             delimiter=","):
    """A CSV file (with a header row) as fit / evaluate / predict data, streamed block_size bytes at a time:
    x, y, sample_weight name its columns as for from_parquet. Needs pyarrow."""
    return CsvBatches(path, x, y, sample_weight, batch_size, shuffle, seed, block_size, delimiter)
