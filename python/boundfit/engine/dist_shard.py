"""fit's data seen by one rank: arrays and memmaps by global batch (every
rank the same order, rank r taking slice r of each global batch of N*B
rows), validation and evaluate() rows in contiguous slices, predict() rows
in blocks of ceil(n / N) (so the gathered blocks are the rows in order),
Sequences by batch index."""

import numpy as np

from ..runtime.dist_group import num_processes, rank
from .arrays import engine_batch

class _Delegate:
    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __setattr__(self, name, value):
        if name in type(self).__dict__:
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)


class ShardedArrays(_Delegate):
    """ArrayData of this rank: the global order (the inner data's shuffle,
    whose generator every rank holds in rank 0's state: the same permutation
    everywhere, one process's) in global batches of N*B rows, rank r taking
    slice r of each; the last global batch is split evenly. Up to N-1
    trailing rows are dropped so that every rank runs the same steps on the
    same number of rows."""

    @property
    def num_rows(self):
        return self._inner.num_rows // num_processes()

    def steps_for(self, batch_size):
        n = -(-self.num_rows // batch_size)
        return min(n, self._inner.steps) if self._inner.steps else n

    def _local_order(self, B):
        N, r = num_processes(), rank()
        n = self.num_rows * N
        g = self._inner.rng.permutation(self._inner.num_rows)[:n] if self._inner.shuffle else np.arange(n)
        parts = []
        for lo in range(0, n, N * B):
            per = min(N * B, n - lo) // N
            parts.append(g[lo + r * per: lo + (r + 1) * per])
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)

    def run_epoch(self, run, epoch, on_chunk, chunks, batch_size):
        inner = self._inner
        x, y = inner._views()
        sw, cw = inner._sw_view(), inner.class_weight
        order, n = self._local_order(batch_size), self.num_rows
        with engine_batch():
            chunks(lambda first, k: run.train(x, y, order, n, batch_size, first, k, sw, cw),
                   self.steps_for(batch_size), on_chunk)


class ShardedEval(_Delegate):
    """Validation ArrayData of this rank: a contiguous slice of the rows (all
    of them on every rank when there are fewer rows than ranks)."""

    def _bounds(self):
        n, N, r = self._inner.num_rows, num_processes(), rank()
        if n < N:
            return 0, n
        return r * n // N, (r + 1) * n // N

    @property
    def local_rows(self):
        lo, hi = self._bounds()
        return hi - lo

    @property
    def num_rows(self):
        return self.local_rows

    @property
    def steps_per_epoch(self):
        n = -(-self.local_rows // self._inner.batch_size)
        return min(n, self._inner.steps) if self._inner.steps else n

    def run_eval(self, run, on_chunk, chunks):
        inner = self._inner
        x, y = inner._views()
        sw = inner._sw_view()
        lo, hi = self._bounds()
        order = np.arange(lo, hi, dtype=np.int64)
        with engine_batch():
            chunks(lambda first, k: run.evaluate(x, y, order, hi - lo, inner.batch_size, first, k, sw),
                   self.steps_per_epoch, on_chunk)


def predict_block(n):
    """Rows per rank for predict: ceil(n / N), or 0 (no sharding) when that
    would leave a rank without rows."""
    N = num_processes()
    per = -(-n // N)
    return 0 if (N - 1) * per >= n else per


def shard_predict_rows(src, per):
    """src (ArrayData of predict) narrowed to this rank's block of `per` rows."""
    lo = src.lo + rank() * per
    src.hi = min(src.hi, lo + per)
    src.lo = lo
    return src


class _ShardSequence:
    """A Sequence seen by one rank: batches rank, rank + N, ... (len // N of them)."""

    def __init__(self, seq):
        self.seq = seq
        self.N, self.r = num_processes(), rank()
        if len(seq) < self.N:
            raise ValueError(f"fit: the Sequence has {len(seq)} batches, fewer than the {self.N} ranks")

    def __len__(self):
        return len(self.seq) // self.N

    def __getitem__(self, i):
        if i < 0 or i >= len(self):
            raise IndexError(i)
        return self.seq[i * self.N + self.r]

    def on_epoch_end(self):
        f = getattr(self.seq, "on_epoch_end", None)
        if f is not None:
            f()


def shard_source(src):
    if hasattr(src, "__getitem__") and hasattr(src, "__len__"):
        return _ShardSequence(src)
    raise ValueError("fit: under DataParallel x must be arrays or a keras.utils.Sequence / PyDataset (indexed); "
                     "a generator cannot be sharded by rank")
