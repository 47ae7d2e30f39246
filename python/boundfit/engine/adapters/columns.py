"""Arrow columns as the arrays of a batch, for the streamed sources (Parquet,
CSV, Hugging Face datasets). What the user picks: x / y / sample_weight as
a column name (that column: numbers, or fixed-length lists of them, one row
a sample), a list of names (scalar columns side by side: (rows, len(list))),
or a dict {model input / output name: a name or a list}. A batch's arrays are
its own (converted from the Arrow table of its rows; batch_bytes says their size); nulls and rows of
unequal length are refused naming the column and the batch."""

import numpy as np

from ...errors import DataError


def arrow():
    import pyarrow
    return pyarrow


class Spec:
    """Which columns make x, y and sample_weight."""

    def __init__(self, x, y=None, sample_weight=None):
        if x is None:
            raise ValueError("x: name the column(s) of the model's input(s), e.g. x=['f0', 'f1'] or x='image'")
        if sample_weight is not None and (y is None or not isinstance(sample_weight, str)):
            raise ValueError(f"sample_weight: one column name (one weight per sample), with y, got "
                             f"{sample_weight!r}")
        self.parts = [p for p in (x, y, sample_weight) if p is not None]
        for n, p in zip(("x", "y"), self.parts):
            _check_part(n, p)

    @property
    def columns(self):
        out = []
        for p in self.parts:
            out += [c for c in _names(p) if c not in out]
        return out

    def check(self, names, where):
        """Every column named is among the source's (names), before a row is read."""
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise DataError(f"{where}: no column {missing[0]!r}; its columns are {list(names)}")

    def batch(self, table, index):
        """(x[, y[, sample_weight]]) of an Arrow table of one batch's rows."""
        return tuple(_part(table, p, f"batch {index}") for p in self.parts)


def _check_part(name, p):
    if isinstance(p, str):
        return
    if isinstance(p, list) and p and all(isinstance(c, str) for c in p):
        return
    if isinstance(p, dict) and p and all(isinstance(k, str) for k in p):
        for v in p.values():
            _check_part(name, v)
        return
    raise ValueError(f"{name}: a column name, a list of names or a dict {{input name: names}}, got {p!r}")


def _names(p):
    if isinstance(p, str):
        return [p]
    if isinstance(p, list):
        return list(p)
    return [c for v in p.values() for c in _names(v)]


def _part(table, p, where):
    if isinstance(p, str):
        return column(table, p, where)
    if isinstance(p, list):
        cols = [column(table, c, where) for c in p]
        for c, a in zip(p, cols):
            if a.ndim != 1:
                raise DataError(f"{where}: column {c!r} holds lists; columns side by side must hold one number "
                                f"per row (name a list column alone)")
        return np.stack(cols, axis=1)
    return {k: _part(table, v, where) for k, v in p.items()}


def column(table, name, where):
    """One column of the table as an array: (rows,) for numbers, (rows, n, ...) for lists of equal length."""
    pa = arrow()
    col = table.column(name)
    if col.null_count:
        raise DataError(f"{where}: column {name!r} has {col.null_count} null values")
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    shape = [len(arr)]
    while pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type):
        if pa.types.is_fixed_size_list(arr.type):
            n = arr.type.list_size
        else:
            lens = np.unique(arr.value_lengths().to_numpy(zero_copy_only=False)) if len(arr) else np.array([0])
            if len(lens) != 1:
                raise DataError(f"{where}: column {name!r} holds lists of different lengths ({int(lens.min())} to "
                                f"{int(lens.max())}); pad them to one length")
            n = int(lens[0])
        shape.append(n)
        arr = arr.flatten()
        if arr.null_count:
            raise DataError(f"{where}: column {name!r} has {arr.null_count} null values in its lists")
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type)):
        raise DataError(f"{where}: column {name!r} has type {col.type}, not numbers")
    return arr.to_numpy(zero_copy_only=False).reshape(shape)


def batch_bytes(batch):
    """Bytes of a batch's arrays (x, y, sample_weight; dicts of arrays too)."""
    total = 0
    for p in batch:
        for a in (p.values() if isinstance(p, dict) else [p]):
            total += a.nbytes
    return total


def rebatch(tables, batch_size, rng=None):
    """Arrow tables of batch_size rows (the last one shorter) from the tables in turn (row groups, blocks),
    each table's rows in a new order of rng's when rng is given (never across tables)."""
    pieces, have = [], 0
    for table in tables:
        rows = rng.permutation(table.num_rows) if rng is not None else None
        at = 0
        while at < table.num_rows:
            take = min(batch_size - have, table.num_rows - at)
            pieces.append(table.slice(at, take) if rows is None else table.take(rows[at:at + take]))
            have, at = have + take, at + take
            if have == batch_size:
                yield _joined(pieces)
                pieces, have = [], 0
        del table, rows   # before the next one is read: one table held at a time
    if have:
        yield _joined(pieces)


def _joined(pieces):
    return pieces[0] if len(pieces) == 1 else arrow().concat_tables(pieces)
