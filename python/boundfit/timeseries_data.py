"""keras.utils.timeseries_dataset_from_array: windows over a series as a
PyDataset whose batches are gathered from the array when asked for (a memmap
stays on disk: one batch of windows is in memory at a time), with Keras 3's
window positions, targets and shuffled order of start positions."""

import math

import numpy as np

from .errors import DataError
from .pydataset import PyDataset


def _count(name, v, low=1, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"timeseries_dataset_from_array: {name} must be an integer >= {low}, got {v!r}")
    return int(v)


class TimeseriesDataset(PyDataset):
    """Batch i: the windows data[start_index + p + k * sampling_rate] (k <
    sequence_length) for its start positions p, with targets[start_index + p].
    Keras returns a tf.data data set, whose batches fit never reorders: nor
    does boundfit's fit (shuffle=True) reorder these."""

    _keeps_order = True

    def __init__(self, data, targets, positions, sequence_length, sampling_rate, batch_size, start_index):
        super().__init__()
        self.data, self.targets, self.positions = data, targets, positions
        self.offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
        self.batch_size, self.start_index = batch_size, start_index

    def __len__(self):
        return math.ceil(len(self.positions) / self.batch_size) if self.batch_size else len(self.positions)

    def _window_rows(self, pos):
        return self.start_index + pos[:, None] + self.offsets[None, :]   # (n, sequence_length)

    def __getitem__(self, index):
        if not isinstance(index, (int, np.integer)) or not -len(self) <= index < len(self):
            raise IndexError(f"TimeseriesDataset: batch index {index!r} out of range for {len(self)} batches")
        index = int(index) % len(self)
        step = self.batch_size or 1
        pos = self.positions[index * step:(index + 1) * step]
        rows = self._window_rows(pos)
        x = np.asarray(self.data[rows.ravel()]).reshape(rows.shape + tuple(np.shape(self.data)[1:]))
        if self.batch_size is None:
            x = x[0]
        if self.targets is None:
            return x
        y = np.asarray(self.targets[self.start_index + pos])
        return x, (y if self.batch_size is not None else y[0])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def take(self, count):
        """The first `count` batches (tf.data's idiom `for x, y in ds.take(1)`), as NumPy arrays."""
        return [self[i] for i in range(min(_count("count", count, low=0), len(self)))]


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None):
    """Keras 3's signature and windows. Without shuffle the batches equal
    Keras's; with shuffle the start positions are permuted as Keras permutes
    them (np.random.RandomState(seed)), without tf.data's second, buffered
    shuffle of the windows."""
    data = data if isinstance(data, np.ndarray) else np.asarray(data)          # a memmap stays one; pandas
    targets = targets if targets is None or isinstance(targets, np.ndarray) else np.asarray(targets)  # -> arrays
    if data.ndim < 1 or data.dtype.kind not in "biuf" or targets is not None and targets.dtype.kind not in "biuf":
        raise DataError("timeseries_dataset_from_array: data and targets must be numeric arrays (or memmaps) with "
                        f"the time axis first, got data of dtype {data.dtype} and shape {data.shape}")
    sequence_length = _count("sequence_length", sequence_length)
    sequence_stride = _count("sequence_stride", sequence_stride)
    sampling_rate = _count("sampling_rate", sampling_rate)
    batch_size = _count("batch_size", batch_size, allow_none=True)
    n = len(data)
    start_index = 0 if start_index is None else _count("start_index", start_index, low=0)
    end_index = n if end_index is None else _count("end_index", end_index, low=0)
    if start_index >= n:
        raise ValueError(f"timeseries_dataset_from_array: start_index must be lower than the length of data ({n}), "
                         f"got {start_index}")
    if not start_index < end_index <= n:
        raise ValueError(f"timeseries_dataset_from_array: end_index must be in ({start_index}, {n}], got {end_index}")
    if targets is not None and len(targets) < 1:
        raise DataError("timeseries_dataset_from_array: targets is empty")
    num_seqs = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    if num_seqs <= 0:
        raise ValueError(f"timeseries_dataset_from_array: no window of sequence_length {sequence_length} at "
                         f"sampling_rate {sampling_rate} fits in data[{start_index}:{end_index}]")
    positions = np.arange(0, num_seqs, sequence_stride, dtype=np.int64)
    if targets is not None and start_index + positions[-1] >= len(targets):
        raise DataError(f"timeseries_dataset_from_array: targets has {len(targets)} rows; the last window starting "
                        f"at start_index + {positions[-1]} needs a target at row {start_index + positions[-1]}")
    if shuffle:
        np.random.RandomState(np.random.randint(1e6) if seed is None else seed).shuffle(positions)
    return TimeseriesDataset(data, targets, positions, sequence_length, sampling_rate, batch_size, start_index)
