"""keras.random: normal, uniform, truncated_normal, randint, categorical,
shuffle, dropout, gamma, beta, binomial and SeedGenerator.

On arrays they return NumPy arrays (float32 by default). `seed`: an int (the
same draw on every call, as Keras), a SeedGenerator (a new draw per call,
reproducible from its seed), or None (from NumPy's global state, which
boundfit.utils.set_random_seed seeds).

Inside a custom layer's call() (and on symbolic tensors), normal, uniform,
truncated_normal and dropout become nodes of the graph (layers/draw.py,
the engine's RANDOM): a shape's first axis is the batch, ops.shape(x)[0]
(None) for a draw per sample or 1 for one draw for the whole batch; the
engine draws anew every step (a SeedGenerator or None), or the same every
step (an int seed, as Keras), and nothing is kept for backward but
dropout's mask. dropout(x, rate, noise_shape) is x times that mask (keep
1 / (1 - rate), else 0); its noise_shape broadcasts. randint, categorical
shuffle, gamma, beta and binomial on symbolic tensors raise
ops.OpNotSupportedError.

The draws are NumPy's (arrays) or the engine's counter-based stream
(graphs), not JAX's: the distributions are Keras's, the numbers are not."""

import numbers

import numpy as np

from .layers.draw import RandomDraw
from .layers.node import DRAWS, KerasTensor, tracing_anchor, tracing_where
from .ops import OpNotSupportedError, multiply

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "categorical", "shuffle", "dropout",
           "gamma", "beta", "binomial"]


class SeedGenerator:
    """Keras's SeedGenerator: a seed whose state advances with each draw."""

    def __init__(self, seed=None, name=None, **kwargs):
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"SeedGenerator: seed must be None or an int >= 0, got {seed!r}")
        self._initial_seed = int(seed)
        self._count = 0
        self.name = name or "seed_generator"

    def next(self, ordered=True):
        """the seed of the next draw (an int)"""
        self._count += 1
        return int(np.random.SeedSequence([self._initial_seed, self._count]).generate_state(1, np.uint64)[0])

    @property
    def state(self):
        return np.array([self._initial_seed, self._count], dtype=np.uint32)

    def get_config(self):
        return {"seed": self._initial_seed}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _rng(seed, op):
    if isinstance(seed, SeedGenerator):
        return np.random.default_rng(seed.next())
    if seed is None:
        return np.random.default_rng(int(np.random.randint(0, 2**63 - 1, dtype=np.int64)))
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"keras.random.{op}: seed must be None, an int >= 0 or a SeedGenerator, got {seed!r}")
    return np.random.default_rng(int(seed))


def _symbolic(op, *xs):
    if any(isinstance(x, KerasTensor) for x in xs):
        raise OpNotSupportedError(
            f"keras.random.{op} on a symbolic tensor{tracing_where()} is not supported by boundfit's graphs yet "
            "(noise is drawn in the engine by layers): use layers.GaussianNoise (x + normal noise), "
            "layers.GaussianDropout or layers.Dropout, or the Random* image layers, in the model; keras.random "
            "works on arrays")


def _shape(shape, op):
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    _symbolic(op, *shape)
    if tracing_anchor() is not None:
        raise OpNotSupportedError(f"keras.random.{op}{tracing_where()} is not supported by boundfit's graphs (only "
                                  "normal, uniform, truncated_normal and dropout draw in a call()); keras.random "
                                  "works on arrays")
    if any(d is None for d in shape):
        raise OpNotSupportedError(f"keras.random.{op}: shape {shape} has an unknown (batch) dimension: a draw of "
                                  "the batch's shape is made inside a custom layer's call() (normal, uniform, "
                                  "truncated_normal, dropout); keras.random works on arrays")
    if not all(isinstance(d, numbers.Integral) and d >= 0 for d in shape):
        raise ValueError(f"keras.random.{op}: shape must be a tuple of ints >= 0, got {shape!r}")
    return tuple(int(d) for d in shape)


def _dtype(dtype, op, kind="f"):
    dt = np.dtype(dtype or ("float32" if kind == "f" else "int32"))
    if not (dt.kind in ("i", "u") if kind == "i" else dt.kind == "f"):
        raise ValueError(f"keras.random.{op}: dtype must be a{'n integer' if kind == 'i' else ' float'} type, "
                         f"got {dtype!r}")
    return dt


# ---- draws in a graph (inside a custom layer's call()) ----

def _in_graph(shape):
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    return tracing_anchor() is not None or any(d is None or isinstance(d, KerasTensor) for d in shape)


def _graph_seed(seed, op):
    """(the engine's seed, fixed) of a draw in a graph: a SeedGenerator's k-th draw (a stream of its own, new
    every step); None: the run's stream (new every step); an int: the same draw every step, as Keras."""
    if isinstance(seed, SeedGenerator):
        k = DRAWS.get(id(seed), (seed, 0))[1]
        DRAWS[id(seed)] = (seed, k + 1)
        s = np.random.SeedSequence([seed._initial_seed, k]).generate_state(1, np.uint64)[0]
        return int(s) % (2**62 - 1) + 1, False
    if seed is None:
        return 0, False
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"keras.random.{op}: seed must be None, an int >= 0 or a SeedGenerator, got {seed!r}")
    s = np.random.SeedSequence([int(seed), 2**32]).generate_state(1, np.uint64)[0]
    return int(s) % (2**62 - 1) + 1, True


def _number(v, what, op):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(float(v)):
        raise OpNotSupportedError(f"keras.random.{op}{tracing_where()}: {what} must be a finite Python number in a "
                                  f"graph, got {v!r}")
    return float(v)


def _graph_shape(shape, op):
    """(per-sample shape, shared) of a draw's shape whose first axis is the batch"""
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if len(shape) < 2 or not (shape[0] is None or shape[0] == 1):
        raise OpNotSupportedError(
            f"keras.random.{op}{tracing_where()}: shape {shape}: in a graph the first axis is the batch, "
            "ops.shape(x)[0] for a draw per sample or 1 for one draw shared by the batch, and at least one more "
            "axis follows (as (batch_size, 1) for one number per sample)")
    rest = shape[1:]
    if len(rest) > 3 or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1
                                for d in rest):
        raise OpNotSupportedError(f"keras.random.{op}{tracing_where()}: shape {shape}: after the batch axis, 1 to 3 "
                                  "axes of known sizes >= 1")
    return tuple(int(d) for d in rest), shape[0] is not None


def _draw(op, shape, a, b, seed, dtype, anchor=None):
    _dtype(dtype, op)
    rest, shared = _graph_shape(shape, op)
    anchor = anchor if anchor is not None else tracing_anchor()
    if anchor is None:
        raise OpNotSupportedError(f"keras.random.{op}: a shape with a batch (None) axis is drawn inside a custom "
                                  "layer's call(), whose inputs give the batch size")
    s, fixed = _graph_seed(seed, op)
    return RandomDraw(rest, op, a, b, seed=s, fixed=fixed, shared=shared)(anchor)


def _stddev(stddev, op):
    sd = _number(stddev, "stddev", op)
    if sd < 0:
        raise ValueError(f"keras.random.{op}: stddev must be >= 0, got {stddev!r}")
    return sd


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of N(mean, stddev^2)."""
    if _in_graph(shape):
        return _draw("normal", shape, _number(mean, "mean", "normal"), _stddev(stddev, "normal"), seed, dtype)
    shape, dt = _shape(shape, "normal"), _dtype(dtype, "normal")
    return (_rng(seed, "normal").standard_normal(shape) * stddev + mean).astype(dt)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of U[minval, maxval)."""
    if _in_graph(shape):
        lo, hi = _number(minval, "minval", "uniform"), _number(maxval, "maxval", "uniform")
        if not lo < hi:
            raise ValueError(f"keras.random.uniform: minval must be below maxval, got {minval!r} and {maxval!r}")
        return _draw("uniform", shape, lo, hi, seed, dtype)
    shape, dt = _shape(shape, "uniform"), _dtype(dtype, "uniform")
    if not minval < maxval:
        raise ValueError(f"keras.random.uniform: minval must be below maxval, got {minval!r} and {maxval!r}")
    return _rng(seed, "uniform").uniform(minval, maxval, shape).astype(dt)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """N(mean, stddev^2) drawn again where more than two standard deviations from the mean (Keras's)."""
    if _in_graph(shape):
        return _draw("truncated_normal", shape, _number(mean, "mean", "truncated_normal"),
                     _stddev(stddev, "truncated_normal"), seed, dtype)
    shape, dt = _shape(shape, "truncated_normal"), _dtype(dtype, "truncated_normal")
    rng = _rng(seed, "truncated_normal")
    z = rng.standard_normal(shape)
    bad = np.abs(z) > 2.0
    while bad.any():
        z[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(z) > 2.0
    return (z * stddev + mean).astype(dt)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers in [minval, maxval)."""
    shape, dt = _shape(shape, "randint"), _dtype(dtype, "randint", "i")
    if not minval < maxval:
        raise ValueError(f"keras.random.randint: minval must be below maxval, got {minval!r} and {maxval!r}")
    return _rng(seed, "randint").integers(minval, maxval, shape).astype(dt)


def categorical(logits, num_samples, dtype="int32", seed=None):
    """num_samples class indices per row of logits (batch, classes), drawn from softmax(logits)."""
    _symbolic("categorical", logits)
    lg = np.asarray(logits, np.float64)
    if lg.ndim != 2:
        raise ValueError(f"keras.random.categorical: logits must be of rank 2 (batch, classes), got shape {lg.shape}")
    p = np.exp(lg - lg.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    rng = _rng(seed, "categorical")
    u = rng.random((lg.shape[0], int(num_samples)))
    cdf = np.cumsum(p, 1)
    out = np.stack([np.minimum(np.searchsorted(c, row, side="right"), lg.shape[1] - 1) for c, row in zip(cdf, u)])
    return out.astype(_dtype(dtype, "categorical", "i"))


def _parameter(v, op, what, shape, positive=True):
    """a distribution's parameter broadcast to the draw's shape, float64; symbolic ones refused"""
    _symbolic(op, v)
    a = np.asarray(v, np.float64)
    try:
        a = np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"keras.random.{op}: {what} of shape {a.shape} does not broadcast to shape {shape}") from None
    if positive and not (a > 0).all():
        raise ValueError(f"keras.random.{op}: {what} must be > 0, got {v!r}")
    return a


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(alpha, scale 1) draws of the given shape (alpha broadcasts to it)."""
    shape, dt = _shape(shape, "gamma"), _dtype(dtype, "gamma")
    return _rng(seed, "gamma").gamma(_parameter(alpha, "gamma", "alpha", shape), size=shape).astype(dt)


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Beta(alpha, beta) draws in (0, 1) of the given shape."""
    shape, dt = _shape(shape, "beta"), _dtype(dtype, "beta")
    a, b = _parameter(alpha, "beta", "alpha", shape), _parameter(beta, "beta", "beta", shape)
    return _rng(seed, "beta").beta(a, b, size=shape).astype(dt)


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """The number of successes in `counts` trials of probability `probabilities`, as floats (Keras's dtype)."""
    shape, dt = _shape(shape, "binomial"), _dtype(dtype, "binomial")
    n = _parameter(counts, "binomial", "counts", shape, positive=False)
    p = _parameter(probabilities, "binomial", "probabilities", shape, positive=False)
    if (n < 0).any() or (n != np.floor(n)).any():
        raise ValueError(f"keras.random.binomial: counts must be whole numbers >= 0, got {counts!r}")
    if ((p < 0) | (p > 1)).any():
        raise ValueError(f"keras.random.binomial: probabilities must be in [0, 1], got {probabilities!r}")
    return _rng(seed, "binomial").binomial(n.astype(np.int64), p, size=shape).astype(dt)


def _tensor(x):
    """x as Keras's convert_to_tensor makes it (JAX without x64): float32 / int32 for 64-bit values"""
    a = np.asarray(x)
    return a.astype({"f": np.float32, "i": np.int32}[a.dtype.kind]) if a.dtype.itemsize == 8 and a.dtype.kind in "fi" \
        else a


def shuffle(x, axis=0, seed=None):
    """x with the entries of each 1-D slice along `axis` in a random order, each slice its own (as Keras on JAX:
    jax.random.permutation(..., independent=True))."""
    _symbolic("shuffle", x)
    a = _tensor(x)
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"keras.random.shuffle: axis {axis} is out of range for shape {a.shape}")
    return _rng(seed, "shuffle").permuted(a, axis=axis)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """inputs with each entry zeroed with probability rate and the rest scaled by 1 / (1 - rate) (always: the
    raw op has no training flag; noise_shape broadcasts one draw along its 1 axes)."""
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate < 1.0:
        raise ValueError(f"keras.random.dropout: rate must be in [0, 1), got {rate!r}")
    if isinstance(inputs, KerasTensor):
        return _graph_dropout(inputs, float(rate), noise_shape, seed)
    _symbolic("dropout", inputs)
    x = _tensor(inputs)
    shape = x.shape if noise_shape is None else tuple(x.shape[i] if d is None else d for i, d in enumerate(noise_shape))
    try:
        np.broadcast_shapes(shape, x.shape)
    except ValueError:
        raise ValueError(f"keras.random.dropout: noise_shape {noise_shape} does not broadcast to {x.shape}") from None
    keep = _rng(seed, "dropout").random(shape) >= rate
    dt = x.dtype if x.dtype.kind == "f" else np.dtype("float32")
    return np.where(keep, x / (1.0 - rate), 0.0).astype(dt)


def _graph_dropout(x, rate, noise_shape, seed):
    """x times a keep mask (1 / (1 - rate) with probability 1 - rate, else 0) of noise_shape (None entries: x's),
    the mask broadcast over its size-1 axes"""
    if rate == 0.0:
        return x
    shape = x.shape if noise_shape is None else tuple(noise_shape)
    if len(shape) != x.ndim:
        raise ValueError(f"keras.random.dropout: noise_shape {noise_shape} must have x's rank {x.ndim} (x: {x.shape})")
    shape = (shape[0],) + tuple(x.shape[i] if d is None else d for i, d in enumerate(shape) if i > 0)
    rest = shape[1:]
    if any(not isinstance(d, numbers.Integral) or d is None or not (d == p or d == 1) for d, p in zip(rest, x._ps)):
        raise ValueError(f"keras.random.dropout: noise_shape {noise_shape} does not broadcast to {x.shape}")
    mask = _draw("dropout", shape, rate, 1.0 / (1.0 - rate), seed, None, anchor=x)
    return multiply(x, mask)
