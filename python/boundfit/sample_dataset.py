"""keras.utils.split_dataset and the per-sample data set it returns.

Keras returns tf.data data sets, which a program then batches
(`left.batch(32).prefetch(AUTOTUNE)`) and gives to fit. boundfit returns a
SampleDataset over the split's arrays: iterated it yields one sample (the
input's structure: an array, a tuple or a dict), `batch()` gives the
PyDataset fit reads, `shuffle()` reshuffles the whole split every epoch (the
split is in memory; a smaller buffer's partial mixing is not imitated), and
`prefetch()` / `cache()` return the data set unchanged (fit already reads
ahead, inside its memory plan). The split itself is Keras's: same sizes, same
samples on each side, the same order for the same shuffle seed."""

import math
import random

import numpy as np

from .pydataset import PyDataset


class SampleDataset:
    """Unbatched samples of `arrays` (a list of equal-length arrays packed as `structure`)."""

    def __init__(self, arrays, structure, order=None, shuffle_seed=None, shuffled=False):
        self._arrays, self._structure = arrays, structure
        self._order = np.arange(len(arrays[0])) if order is None else order
        self._shuffled, self._seed = shuffled, shuffle_seed

    def __len__(self):
        return len(self._order)

    def cardinality(self):
        return len(self)

    def _pack(self, parts):
        kind, keys = self._structure
        if kind == "array":
            return parts[0]
        if kind == "dict":
            return dict(zip(keys, parts))
        return tuple(parts)

    def _sample(self, i):
        return self._pack([a[i] for a in self._arrays])

    def __iter__(self):
        return (self._sample(i) for i in self._order)

    def as_numpy_iterator(self):
        return iter(self)

    def take(self, count):
        return SampleDataset(self._arrays, self._structure, self._order[:max(int(count), 0)])

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) or buffer_size == 0 \
                or buffer_size < -1:
            raise ValueError(f"shuffle: buffer_size must be a positive int (or -1, AUTOTUNE), got {buffer_size!r}")
        return SampleDataset(self._arrays, self._structure, self._order, seed, True)

    def prefetch(self, buffer_size=None):
        return self

    def cache(self, filename=""):
        return self

    def batch(self, batch_size, drop_remainder=False):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch: batch_size must be a positive int, got {batch_size!r}")
        return BatchedSamples(self, int(batch_size), bool(drop_remainder))


class BatchedSamples(PyDataset):
    """The batches of a SampleDataset, as fit / evaluate / predict read them; a shuffled split is reordered
    at every epoch's end."""

    def __init__(self, samples, batch_size, drop_remainder):
        super().__init__()
        self.samples, self.batch_size, self.drop_remainder = samples, batch_size, drop_remainder
        self._rng = np.random.default_rng(samples._seed)
        self._order = samples._order.copy()
        if samples._shuffled:
            self._rng.shuffle(self._order)

    def __len__(self):
        n = len(self._order)
        return n // self.batch_size if self.drop_remainder else math.ceil(n / self.batch_size)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        idx = self._order[index * self.batch_size:(index + 1) * self.batch_size]
        return self.samples._pack([a[idx] for a in self.samples._arrays])

    def on_epoch_end(self):
        if self.samples._shuffled:
            self._rng.shuffle(self._order)

    def prefetch(self, buffer_size=None):
        return self

    def cache(self, filename=""):
        return self


def _as_arrays(dataset):
    """(list of arrays, structure) of what split_dataset takes: an array, a list / tuple / dict of equal-length
    arrays, a SampleDataset, a tf.data data set or a torch Dataset of samples (read into arrays, as Keras does)."""
    if isinstance(dataset, SampleDataset):
        return [a[dataset._order] for a in dataset._arrays], dataset._structure
    if isinstance(dataset, np.ndarray):
        return [dataset], ("array", None)
    if isinstance(dataset, dict):
        keys = list(dataset)
        return [np.asarray(dataset[k]) for k in keys], ("dict", keys)
    if isinstance(dataset, (list, tuple)):
        if not dataset:
            raise ValueError("split_dataset: dataset is an empty list")
        return [np.asarray(a) for a in dataset], ("tuple", None)
    if hasattr(dataset, "as_numpy_iterator") or (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")
                                                  and type(dataset).__module__.startswith("torch")):
        samples = list(dataset.as_numpy_iterator() if hasattr(dataset, "as_numpy_iterator")
                       else (dataset[i] for i in range(len(dataset))))
        if not samples:
            raise ValueError("split_dataset: dataset has no samples")
        first = samples[0]
        if isinstance(first, dict):
            keys = list(first)
            return [np.stack([np.asarray(s[k]) for s in samples]) for k in keys], ("dict", keys)
        if isinstance(first, (tuple, list)):
            return [np.stack([np.asarray(s[j]) for s in samples]) for j in range(len(first))], ("tuple", None)
        return [np.stack([np.asarray(s) for s in samples])], ("array", None)
    raise TypeError("split_dataset: dataset must be an array, a list / tuple / dict of arrays, a tf.data data set "
                    f"or a torch Dataset, got {type(dataset).__name__}")


def _size(value, name, total):
    if value is None:
        return None
    if isinstance(value, float):
        if not 0 < value < 1:
            raise ValueError(f"split_dataset: {name} as a fraction must be in (0, 1), got {value}")
        return round(value * total)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 < value < total:
            raise ValueError(f"split_dataset: {name} must be a positive int smaller than {total}, got {value}")
        return value
    raise TypeError(f"split_dataset: {name} must be an int, a float or None, got {type(value).__name__}")


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None, preferred_backend=None):
    """Keras's split_dataset: (left, right) SampleDatasets. left_size / right_size: a fraction (float in (0, 1))
    or a count; either may be None (the complement). shuffle with a seed orders the samples as Keras does."""
    if preferred_backend not in (None, "tensorflow", "torch", "jax", "numpy"):
        raise ValueError(f"split_dataset: preferred_backend must be None or a backend name, got {preferred_backend!r}")
    arrays, structure = _as_arrays(dataset)
    total = len(arrays[0])
    for a in arrays:
        if len(a) != total:
            raise ValueError(f"split_dataset: the arrays of dataset have different lengths ({total} and {len(a)})")
    if left_size is None and right_size is None:
        raise ValueError("split_dataset: give left_size, right_size or both")
    if isinstance(left_size, float) and isinstance(right_size, float) and left_size + right_size > 1:
        raise ValueError(f"split_dataset: left_size + right_size is {left_size + right_size}, over 1")
    left, right = _size(left_size, "left_size", total), _size(right_size, "right_size", total)
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"split_dataset: left_size + right_size is {left + right} samples, over the {total} there are")
    if left == 0 or right == 0:
        raise ValueError(f"split_dataset: a split of {total} samples into {left} and {right} leaves one side empty")
    order = list(range(total))
    if shuffle:
        # Keras shuffles its list of samples with Python's random seeded so; the same draws order the indices
        random.Random(random.randint(0, int(1e6)) if seed is None else seed).shuffle(order)
    order = np.asarray(order)
    return (SampleDataset(arrays, structure, order[:left]), SampleDataset(arrays, structure, order[total - right:]))
