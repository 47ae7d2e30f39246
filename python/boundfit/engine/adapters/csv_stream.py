"""bf.data.from_csv: a CSV file streamed one block at a time: block_size
bytes of text are read (cut after the last whole row) and parsed by pyarrow
on this thread (its own streaming reader reads some thirty blocks ahead),
only the columns named are converted, and the block is held with its
parsed columns while its rows are cut into batches (a batch that straddles
two blocks is joined). Column types
are inferred from the first block; a later block that does not parse as
them is refused naming the file and the batch. shuffle=True shuffles the
rows within each block (a bounded buffer: the file is read in order and
never held whole). The number of rows is not known before the end: an
epoch runs until the file ends."""

import numpy as np

from ... import session
from ...errors import DataError
from ..plan import PlanEntry
from . import columns


# pyarrow's CSV parser's working buffers, whatever the block's size: 128-135 KiB measured for blocks of
# 1-8 KiB (pyarrow 26), counted twice over
PARSER_BYTES = 256 << 10


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
        try:
            first = next(self._blocks(), None)   # the header and the first block: the columns and their types
        except OSError as e:
            raise DataError(f"{self.path}: not readable ({e})") from None
        if first is None:
            raise DataError(f"{self.path} holds no rows")
        self.schema, self._header = self._parse(*first).schema, len(first[0])
        self.spec.check(self.schema.names, self.path)
        self.rng = np.random.default_rng(session.next_seed() if seed is None else seed)
        self._first_bytes = 0

    def _blocks(self):
        """The header line and the file's text in blocks of about block_size bytes, cut after a newline (a
        row longer than a block makes its block longer)."""
        with open(self.path, "rb") as f:
            header, rest = f.readline(), b""
            while True:
                data = f.read(self.block_size)
                if not data:
                    if rest.strip():
                        yield header, rest
                    return
                data = rest + data
                cut = data.rfind(b"\n") + 1
                rest = data[cut:]
                if cut:
                    yield header, data[:cut]

    def _parse(self, header, text, types=None, batch=None):
        """One block's rows as an Arrow table: only the columns named, of the first block's types."""
        c = csv()
        pa = columns.arrow()
        opts = c.ConvertOptions(include_columns=self.spec.columns if types is not None else None,
                                column_types=types)
        try:
            return c.read_csv(pa.py_buffer(header + text), convert_options=opts,
                              read_options=c.ReadOptions(use_threads=False, block_size=len(header) + len(text) + 1),
                              parse_options=c.ParseOptions(delimiter=self.delimiter))
        except (pa.ArrowInvalid, ValueError) as e:
            where = "" if batch is None else f"batch {batch}: "   # a later block unlike the first
            raise DataError(f"{self.path}: {where}{e}", batch_index=batch) from None

    def plan_entries(self):
        """A block's text (up to two blocks long with the row carried over; read, and joined to the header:
        twice), the parser's copy of it and its parsed columns (numbers: 8 bytes a value at most, and a value
        takes two characters at least with its delimiter: 4x the text): 8 blocks of text bound it while rows
        are shorter than a block; with the parser's own buffers (PARSER_BYTES); and the batches."""
        return [PlanEntry(f"{self.path}: one block of {self.block_size} bytes read and parsed (rows up to a "
                          "block long; bound)",
                          8 * (2 * self.block_size + self._header) + PARSER_BYTES, "host", "data",
                          "outside the arena: the streamed source"),
                PlanEntry(f"{self.path}: batches of {self.batch_size} rows (the one being joined and converted, "
                          "the one trained on, the first kept for checks; bound)", 4 * self._first_bytes, "host",
                          "data", "outside the arena: the streamed source")]

    def __iter__(self):
        types = {c: self.schema.field(c).type for c in self.spec.columns}
        k = 0   # the batch the next block's rows go into (a block that does not parse names it)

        def blocks():
            for header, text in self._blocks():
                yield self._parse(header, text, types, k)

        for table in columns.rebatch(blocks(), self.batch_size, self.rng if self.shuffle else None):
            yield self._batch(table, k)
            k += 1

    def _batch(self, table, k):
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
