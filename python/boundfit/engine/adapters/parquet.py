"""bf.data.from_parquet: a Parquet file streamed one row group at a time.
Only the columns named are read; one row group is held (read and decoded)
while its rows are cut into batches, a batch that straddles two row groups
is joined from the end of one and the start of the next. shuffle=True
shuffles the order of the row groups each epoch and the rows within each
(not across row groups: the file is never held whole). The plan counts the
largest row group's read (its column chunks as stored and decompressed, and
decoded) and the batches: plan_entries()."""

import numpy as np

from ... import session
from ...errors import DataError
from ..plan import PlanEntry
from . import columns


def parquet():
    import pyarrow.parquet
    return pyarrow.parquet


def _value_width(t):
    """Bytes of one leaf value of Arrow type t (8: not a fixed-width number)."""
    while hasattr(t, "value_type"):   # lists: their values
        t = t.value_type
    try:
        return max(t.bit_width // 8, 1)
    except ValueError:
        return 8


class ParquetBatches:
    """A re-iterable of (x, y[, sample_weight]) batches read from a Parquet file."""
    _keeps_order = True   # its own shuffle (row groups, rows within them), not fit's

    def __init__(self, path, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.path, self.batch_size, self.shuffle = str(path), int(batch_size), bool(shuffle)
        self.spec = columns.Spec(x, y, sample_weight)
        try:
            self.file = parquet().ParquetFile(self.path)
        except OSError as e:
            raise DataError(f"{self.path}: not a readable Parquet file ({e})") from None
        meta = self.file.metadata
        names = self.file.schema_arrow.names
        self.spec.check(names, self.path)
        self._cols = [names.index(c) for c in self.spec.columns]
        self.num_rows = meta.num_rows
        if self.num_rows == 0:
            raise DataError(f"{self.path} holds no rows")
        self.rng = np.random.default_rng(session.next_seed() if seed is None else seed)
        self._first_bytes = 0

    def __len__(self):
        """Batches an epoch yields (the rows over batch_size, the last one smaller)."""
        return -(-self.num_rows // self.batch_size)

    def _group_bytes(self, g):
        """A bound of what reading row group g holds: its chunks of the named columns as stored (read at
        once) and decompressed, and decoded (its values at their Arrow width; offsets and validity)."""
        rg = self.file.metadata.row_group(g)
        total = 0
        for leaf in range(rg.num_columns):
            c = rg.column(leaf)
            name = c.path_in_schema.split(".")[0]
            if name not in self.spec.columns:
                continue
            t = self.file.schema_arrow.field(name).type
            offsets = 4 * (rg.num_rows + 1) if hasattr(t, "value_type") else 0   # a list column's
            total += (c.total_compressed_size + c.total_uncompressed_size + _value_width(t) * c.num_values
                      + offsets + c.num_values // 8 + 256)
        return total

    def plan_entries(self):
        """The memory of an epoch's reading, for the plan (memory.build_plan's source_entries)."""
        groups = self.file.metadata.num_row_groups
        g = max(range(groups), key=self._group_bytes)
        return [PlanEntry(f"{self.path}: one row group read and decoded (largest: group {g} of {groups}, "
                          f"{self.file.metadata.row_group(g).num_rows} rows; bound)", self._group_bytes(g), "host",
                          "data", "outside the arena: the streamed source"),
                PlanEntry(f"{self.path}: batches of {self.batch_size} rows (the one being joined and converted, "
                          "the one trained on, the first kept for checks; bound)", 4 * self._first_bytes, "host",
                          "data", "outside the arena: the streamed source")]

    def __iter__(self):
        groups = self.file.metadata.num_row_groups
        order = self.rng.permutation(groups) if self.shuffle else range(groups)
        tables = (self.file.read_row_group(int(g), columns=self.spec.columns) for g in order)
        for k, table in enumerate(columns.rebatch(tables, self.batch_size, self.rng if self.shuffle else None)):
            yield self._batch(table, k)

    def _batch(self, table, k):
        b = self.spec.batch(table, k)
        if k == 0:
            self._first_bytes = max(self._first_bytes, columns.batch_bytes(b))
        return b

    def __repr__(self):
        return f"from_parquet({self.path!r}, batch_size={self.batch_size}, {self.num_rows} rows)"


def from_parquet(path, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None):
    """A Parquet file as fit / evaluate / predict data, streamed one row group at a time: x, y,
    sample_weight name its columns (a name, a list of scalar columns side by side, or a dict by model
    input / output name). Needs pyarrow."""
    return ParquetBatches(path, x, y, sample_weight, batch_size, shuffle, seed)
