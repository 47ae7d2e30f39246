"""CategoryEncoding and Discretization: Keras 3's numeric preprocessing layers
in NumPy, host-side (host_layer.py): integer ids to one-hot / multi-hot /
count vectors (count_weights too), and numbers to bin ids by boundaries,
given or adapted (Keras's approximate quantiles: a weighted summary per
batch, merged and compressed to epsilon, in float32, step for step)."""

import numpy as np

from ..errors import DataError
from .host_layer import HostLayer, encode, encoded_shape, output_mode_arg, positive_int, refuse_sparse
from .layer import keras_config


class CategoryEncoding(HostLayer):
    """Keras 3's CategoryEncoding(num_tokens, output_mode="multi_hot"): integer ids in [0, num_tokens) encoded
    as float32 one-hot, multi-hot or count vectors (count_weights= weighs the counts), equal to Keras's."""
    _host_side = True   # shaped here, not by the engine (host_layer.HostLayer)
    _base = "category_encoding"
    _input_kinds = "biuf"

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        mode = "multi_hot" if output_mode == "binary" else output_mode
        if mode not in ("count", "one_hot", "multi_hot"):
            raise ValueError(f"CategoryEncoding: output_mode must be one of ['count', 'one_hot', 'multi_hot'], got "
                             f"output_mode={output_mode!r}")
        if num_tokens is None:
            raise ValueError("CategoryEncoding: num_tokens must be set to use this layer; if the number of tokens "
                             "is not known beforehand, use the IntegerLookup layer instead")
        self.num_tokens = positive_int("CategoryEncoding", num_tokens, "num_tokens")
        refuse_sparse("CategoryEncoding", sparse)
        self.output_mode, self.sparse = mode, False

    def out_dtype(self):
        """float32, as Keras's (the layer's dtype)."""
        return np.float32

    def compute_output_shape(self, input_shape):
        """Keras's: the last axis replaced by num_tokens (one_hot: appended, unless it is 1)."""
        input_shape = tuple(input_shape)
        if not input_shape:
            return (self.num_tokens,)
        if self.output_mode == "one_hot" and (input_shape[-1] != 1 or len(input_shape) == 1):
            return input_shape + (self.num_tokens,)
        return input_shape[:-1] + (self.num_tokens,)

    def __call__(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"{self.name} (CategoryEncoding): count_weights is not used when output_mode is not "
                             f"'count', got output_mode={self.output_mode!r}")
        return super().__call__(inputs) if count_weights is None else super().__call__(inputs, count_weights)

    def _compute(self, a, count_weights=None):
        a = np.asarray(a)
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise DataError(f"{self.name} (CategoryEncoding): the ids hold NaN or Inf")
        w = None if count_weights is None else np.asarray(count_weights, np.float32)
        if w is not None and w.shape != a.shape:
            raise DataError(f"{self.name} (CategoryEncoding): count_weights has shape {w.shape}, the ids {a.shape}")
        return encode(a.astype(np.int64), self.output_mode, self.num_tokens, np.float32, w)


class Discretization(HostLayer):
    """Keras 3's Discretization(bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int"): numbers to
    the index of their bin (np.digitize: bins[i-1] <= x < bins[i]), as int32 ids or float32 encodings;
    adapt(data) finds num_bins - 1 boundaries at approximate quantiles, as Keras's adapt does."""
    _host_side = True   # shaped here, not by the engine (host_layer.HostLayer)
    _base = "discretization"
    _input_kinds = "biuf"
    _keras_omit = ("trainable",)   # Keras's config has no such key (its __init__ takes none)

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 dtype=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        refuse_sparse("Discretization", sparse)
        self.output_mode = output_mode_arg("Discretization", output_mode, ("int", "one_hot", "multi_hot", "count"))
        if num_bins is not None:
            num_bins = positive_int("Discretization", num_bins, "num_bins", 0)
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Discretization: both num_bins and bin_boundaries should not be set, got "
                             f"num_bins={num_bins} and bin_boundaries={bin_boundaries!r}")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("Discretization: you need to set either num_bins or bin_boundaries")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon <= 1:
            raise ValueError(f"Discretization: epsilon must be a number in (0, 1], got epsilon={epsilon!r}")
        self.num_bins, self.epsilon, self.sparse = num_bins, float(epsilon), False
        self.bin_boundaries = None if bin_boundaries is None else self._boundaries(bin_boundaries)
        self._summary = np.zeros((2, 0), np.float32)

    @classmethod
    def _from_keras_config(cls, kwargs):
        """Keras's from_config: an adapted layer's config holds num_bins and the boundaries both."""
        bounds = kwargs.pop("bin_boundaries", None) if kwargs.get("num_bins") is not None else None
        layer = cls(**kwargs)
        if bounds is not None:
            layer.bin_boundaries = layer._boundaries(bounds)
        return layer

    @classmethod
    def from_config(cls, config):
        """Keras's from_config (an adapted layer's config holds num_bins and the boundaries)."""
        return cls._from_keras_config(dict(config))

    @staticmethod
    def _boundaries(b):
        a = np.asarray(b, dtype=np.float64)
        if a.ndim != 1 or not np.all(np.isfinite(a)):
            raise ValueError(f"Discretization: bin_boundaries must be a 1-D list of finite numbers, got "
                             f"bin_boundaries={b!r}")
        return [float(v) for v in a]

    def out_dtype(self):
        """int32 ids ("int"), float32 encodings, as Keras's."""
        return np.int32 if self.output_mode == "int" else np.float32

    def _depth(self):
        return len(self.bin_boundaries) + 1 if self.bin_boundaries is not None else self.num_bins

    def compute_output_shape(self, input_shape):
        """Keras's: the input's shape ("int"); one_hot appends the depth (replacing a last axis of 1);
        multi_hot / count reduce the second axis."""
        input_shape = tuple(input_shape)
        if self.output_mode == "int":
            return input_shape
        depth = self._depth()
        if self.output_mode == "one_hot":
            if input_shape and input_shape[-1] == 1 and len(input_shape) > 1:
                return input_shape[:-1] + (depth,)
            return input_shape + (depth,)
        return input_shape[:1] + input_shape[2:] + (depth,) if len(input_shape) >= 2 else (depth,)

    def _compute(self, a):
        if self.bin_boundaries is None:
            raise ValueError(f"{self.name} (Discretization): pass bin_boundaries at construction or call "
                             "adapt(data) before using the layer")
        ids = np.searchsorted(np.asarray(self.bin_boundaries, np.float32), np.asarray(a, np.float32), side="right")
        return encode(ids.astype(np.int64), self.output_mode, self._depth(), self.out_dtype())

    def adapt(self, data, steps=None):
        """Keras's adapt: boundaries at num_bins quantiles of data (an array, or an iterable / tf.data Dataset
        of batches), through Keras's epsilon-compressed summaries."""
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized with bin_boundaries, "
                             "use num_bins instead")
        if steps is not None:
            steps = positive_int("Discretization.adapt", steps, "steps")
        self._summary = np.zeros((2, 0), np.float32)
        if isinstance(data, np.ndarray) or not hasattr(data, "__iter__") or _eager_tensor(data):
            self._update(data)
        else:
            for k, batch in enumerate(data):
                if steps is not None and k >= steps:
                    break
                self._update(batch)
        if self._summary.shape[1] == 0:
            raise DataError(f"{self.name}.adapt: the data holds no values")
        self.bin_boundaries = [float(v) for v in _compress(self._summary, 1.0 / self.num_bins)[0, :-1]]

    def _update(self, batch):
        v = np.array(batch.numpy() if hasattr(batch, "numpy") and not isinstance(batch, np.ndarray) else batch)
        if v.dtype.kind not in "biuf":
            raise DataError(f"{self.name}.adapt: the data must be numbers, got dtype {v.dtype}")
        v = np.sort(v.astype(np.float32).reshape(-1))
        if v.size == 0:
            return
        step = max(v.size / (1.0 / self.epsilon), 1)   # Keras's summarize: every step-th value, weighted by step
        picked = v[int(step - 1)::int(step)]
        summary = np.stack([picked, np.ones_like(picked) * step])
        merged = np.concatenate((summary, self._summary), axis=1)
        merged = np.take(merged, np.argsort(merged[0]), axis=1)
        self._summary = _compress(merged, self.epsilon)


def _eager_tensor(x):
    return type(x).__module__.startswith(("tensorflow", "jax", "jaxlib")) and hasattr(x, "shape") \
        and not type(x).__name__.endswith("Dataset")


def _compress(summary, epsilon):
    """Keras's compress_summary: the weighted summary interpolated at the epsilon quantiles."""
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    frac = cum / cum[-1]
    bins = np.interp(percents, frac, summary[0])
    cum = np.interp(percents, frac, cum)
    weights = cum - np.concatenate((np.array([0]), cum[:-1]))
    return np.stack((bins, weights)).astype(np.float32)


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(CategoryEncoding)
def _category_encoding_config(l):
    return dict(num_tokens=l.num_tokens, output_mode=l.output_mode)


@keras_config(Discretization)
def _discretization_config(l):
    return dict(bin_boundaries=l.bin_boundaries, num_bins=l.num_bins, epsilon=l.epsilon, output_mode=l.output_mode,
                sparse=False, dtype="float32")
