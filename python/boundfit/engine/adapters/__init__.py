"""Inputs from the other ecosystems: tf.data, torch DataLoader, pandas, Hugging
Face datasets, Parquet / CSV files. None of these packages is imported here:
an object is recognized by the modules and names of its type's classes, and
each adapter imports its package only when it is handed such an object
(pyarrow, for the streamed files, only when bf.data.from_parquet / from_csv /
from_hf is called)."""

from ...errors import DataError
from . import frames, tensors


def _classes(v):
    """(module, class name) of v's type and its bases."""
    return [(getattr(c, "__module__", "") or "", c.__name__) for c in type(v).__mro__]


def _is(v, package, name):
    return any(m.split(".")[0] == package and n == name for m, n in _classes(v))


def is_frame(v):
    """A pandas DataFrame or Series (taken as arrays, as Keras 3 does, never as a Sequence)."""
    return _is(v, "pandas", "DataFrame") or _is(v, "pandas", "Series")


def _hf(v):
    return _is(v, "datasets", "Dataset") or _is(v, "datasets", "IterableDataset")


def adapt(v, what):
    """v as the engine's data sources take it: a tf.data.Dataset or a DataLoader
    as a re-iterable of NumPy batches, a DataFrame / Series (also inside a
    list, tuple or dict) as an array; anything else as it is."""
    if v is None:
        return None
    if _is(v, "tensorflow", "DatasetV2"):
        return tensors.Batches(v, "tf.data.Dataset")
    if _is(v, "torch", "DataLoader"):
        return tensors.Batches(v, "torch DataLoader")
    if is_frame(v):
        return frames.to_array(v, what)
    if _hf(v):
        raise DataError(f"{what}: a Hugging Face {type(v).__name__} yields one row at a time; choose its columns and "
                        "batch size with bf.data.from_hf(dataset, x=..., y=..., batch_size=...) (as "
                        "dataset.to_tf_dataset(columns=..., label_cols=...) does for Keras)")
    if isinstance(v, (list, tuple)) and any(is_frame(e) for e in v):
        return type(v)(adapt(e, f"{what}[{k}]") for k, e in enumerate(v))
    if isinstance(v, dict) and any(is_frame(e) for e in v.values()):
        return {k: adapt(e, f"{what}[{k!r}]") for k, e in v.items()}
    return v


def adapt_all(x, y, validation_data):
    """fit / evaluate / predict's x, y and validation_data (a tuple of them too) adapted."""
    if isinstance(validation_data, tuple):
        validation_data = tuple(adapt(e, f"validation_data[{k}]") for k, e in enumerate(validation_data))
    else:
        validation_data = adapt(validation_data, "validation_data")
    return adapt(x, "x"), adapt(y, "y"), validation_data
