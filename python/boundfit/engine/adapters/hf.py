"""bf.data.from_hf: a Hugging Face datasets.Dataset as fit / evaluate /
predict data. Its Arrow table stays where the library keeps it (memory-mapped
from its cache files); each batch's rows are taken from it (honouring its
indices mapping after shuffle / select / filter) and converted, so only one
batch is ever held. x / y / sample_weight name its columns as for
from_parquet (to_tf_dataset's columns / label_cols); shuffle=True draws a
new order of the rows each epoch (as to_tf_dataset(shuffle=True))."""

import numpy as np

from ... import session
from ...errors import DataError
from ..plan import PlanEntry
from . import columns


class HFBatches:
    """An indexed source (len, [i]) of (x, y[, sample_weight]) batches of a datasets.Dataset."""
    _keeps_order = True   # its own shuffle, per row

    def __init__(self, dataset, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None):
        if not hasattr(dataset, "with_format") or not hasattr(dataset, "column_names"):
            raise DataError(f"from_hf: dataset must be a datasets.Dataset, got {type(dataset).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.spec = columns.Spec(x, y, sample_weight)
        self.spec.check(dataset.column_names, "from_hf: the dataset")
        self.ds = dataset.select_columns(self.spec.columns).with_format("arrow")
        self.batch_size, self.shuffle = int(batch_size), bool(shuffle)
        self.num_rows = len(dataset)
        if self.num_rows == 0:
            raise DataError("from_hf: the dataset holds no rows")
        self.rng = np.random.default_rng(session.next_seed() if seed is None else seed)
        self.order = self.rng.permutation(self.num_rows) if self.shuffle else None
        self._first_bytes = 0

    def __len__(self):
        return -(-self.num_rows // self.batch_size)

    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError(i)
        lo, hi = i * self.batch_size, min((i + 1) * self.batch_size, self.num_rows)
        rows = self.ds[lo:hi] if self.order is None else self.ds[[int(r) for r in self.order[lo:hi]]]
        b = self.spec.batch(rows, i)
        if i == 0:
            self._first_bytes = max(self._first_bytes, columns.batch_bytes(b))
        return b

    def on_epoch_end(self):
        if self.shuffle:
            self.order = self.rng.permutation(self.num_rows)

    def plan_entries(self):
        return [PlanEntry(f"Hugging Face dataset: batches of {self.batch_size} rows (the Arrow rows taken, their "
                          "arrays, the first kept for checks; bound)", 4 * self._first_bytes, "host", "data",
                          "outside the arena: the streamed source")]

    def __repr__(self):
        return f"from_hf(batch_size={self.batch_size}, {self.num_rows} rows)"


def from_hf(dataset, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None):
    """A Hugging Face datasets.Dataset as fit / evaluate / predict data, read batch by batch from its
    (memory-mapped) Arrow table: x, y, sample_weight name its columns as for from_parquet."""
    return HFBatches(dataset, x, y, sample_weight, batch_size, shuffle, seed)
