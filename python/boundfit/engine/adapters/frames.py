"""pandas DataFrames and Series as x or y, as Keras 3 takes them: a DataFrame
is its to_numpy() (N, columns), a Series a column (N, 1). A frame whose
columns share one NumPy dtype is used in place (pandas keeps them in one
block: to_numpy() is a view of it); a frame of mixed numeric dtypes is
converted once to float32 (what Keras converts it to, and what the engine
reads). Columns that hold no numbers, or missing values of pandas's
nullable dtypes, are refused by name."""

import numpy as np

from ...errors import DataError


def _numeric(dtype):
    return isinstance(dtype, np.dtype) and dtype.kind in "biuf"


def _check_columns(frame, what):
    cols = frame.items() if hasattr(frame, "columns") else [(frame.name, frame)]
    for name, col in cols:
        if _numeric(col.dtype):
            continue
        kind = getattr(col.dtype, "kind", "O")
        if kind not in "biuf":
            raise DataError(f"{what}: column {name!r} has dtype {col.dtype}, not numbers (encode it first, e.g. "
                            "with pandas.get_dummies or a StringLookup)")
        missing = int(col.isna().sum())
        if missing:
            raise DataError(f"{what}: column {name!r} ({col.dtype}) has {missing} missing values; fill or drop them")


def to_array(frame, what):
    """A DataFrame as an (N, columns) array, a Series as (N, 1)."""
    _check_columns(frame, what)
    if not hasattr(frame, "columns"):   # a Series
        a = frame.to_numpy()
        a = a if _numeric(a.dtype) else frame.to_numpy(dtype=np.float32)
        return a[:, None]
    dtypes = {d for d in frame.dtypes}
    if len(dtypes) == 1 and _numeric(next(iter(dtypes))):
        return frame.to_numpy()             # one block of one dtype: a view
    return frame.to_numpy(dtype=np.float32)  # mixed dtypes: one conversion, as Keras's to floatx
