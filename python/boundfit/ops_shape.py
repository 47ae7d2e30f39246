"""keras.ops that move, copy or select elements (re-exported by ops.py):
broadcast_to, flip, fliplr, flipud, rot90, tril, triu, diagonal, trace,
diag, diagflat, hstack, vstack, dstack, split, array_split, hsplit, vsplit,
dsplit, unstack, moveaxis, swapaxes, tile, repeat, roll, pad, append, ravel,
slice, slice_update, extract_sequences, depth_to_space, space_to_depth.

On arrays: NumPy, as Keras computes them. On symbolic tensors each is a
composition of the engine's primitives (ops_lax.py): a reversal, roll,
repeat, tile, broadcast or index-mode pad is a Gather at constant positions
(its backward a scatter-add, so copies sum their gradients); a constant pad
concatenates blocks of full_like; a split, slice or diagonal is Slice or
Gather; axes move by Permute. Each is recorded as Keras's operation node
(layers/opnode.py) with its arguments, so .keras files hold what Keras
writes. What would mix the samples of a batch (axis None or 0: flipud,
vstack, vsplit, ravel, diag, diagflat) raises OpNotSupportedError naming
the op."""

import numpy as np

from . import ops_lax as lx
from .layers.emath import Unary
from .layers.layer import Variable
from .layers.node import KerasTensor, tracing_anchor
from .layers.opnode import record
from .layers.reshaping import Slice
from .ops_stacked import Stacked, stacked_axis0

NUMPY, NN, MATH, CORE = lx.NUMPY, lx.NN, lx.MATH, lx.CORE


def _ax(op, axis):
    """axis (int or several) as a tuple"""
    return (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)


# ---- reversal, rotation, broadcast ----

def _flip(x, axes):
    for a in axes:
        n = lx.static("flip", x, a)
        x = lx.take(x, np.arange(n)[::-1], a)
    return x


def flip(x, axis=None):
    """keras.ops.flip: the order of the elements along axis reversed (a Gather on symbolic tensors)"""
    if not lx.sym(x):
        return np.flip(x, axis)
    axes = lx.sample_axes("flip", x, axis)
    return record(_flip(x, axes), "Flip", NUMPY, {"axis": axis}, [x])


def fliplr(x):
    """keras.ops.fliplr: flip along axis 1"""
    if not lx.sym(x):
        return np.fliplr(x)
    return record(_flip(x, (lx.sample_axis("fliplr", x, 1),)), "Fliplr", NUMPY, {}, [x])


def flipud(x):
    """keras.ops.flipud: flip along axis 0 (arrays only: on a symbolic tensor it is the batch axis)"""
    if not lx.sym(x):
        return np.flipud(x)
    lx.refuse("flipud", "it reverses the batch axis, mixing the samples; use keras.ops.flip(x, axis) on a sample axis")


def rot90(array, k=1, axes=(0, 1)):
    """keras.ops.rot90: a quarter turn k times in the plane of two sample axes (flips and a Permute)"""
    if not lx.sym(array):
        return np.rot90(array, k, axes)
    a1, a2 = (lx.sample_axis("rot90", array, a) for a in axes)
    if a1 == a2:
        raise ValueError(f"keras.ops.rot90: axes {axes} must be two different axes")
    k, perm = int(k) % 4, list(range(len(array._ps)))
    perm[a1], perm[a2] = perm[a2], perm[a1]
    y = array
    if k == 1:
        y = lx.permute(_flip(array, (a2,)), perm)
    elif k == 2:
        y = _flip(array, (a1, a2))
    elif k == 3:
        y = _flip(lx.permute(array, perm), (a2,))
    return record(y, "Rot90", NUMPY, {"k": k, "axes": list(axes)}, [array])


def _broadcast(op, x, ps):
    """x's sample axes copied out to per-sample shape ps (NumPy's rules, right-aligned): Reshape, then a Gather of
    position 0 along each axis of size 1"""
    own = lx.static(op, x)
    if len(own) > len(ps):
        raise ValueError(f"keras.ops.{op}: cannot broadcast {x.shape} to {(None,) + tuple(ps)}")
    own = (1,) * (len(ps) - len(own)) + tuple(own)
    y = lx.reshape(x, own)
    for a, (p, q) in enumerate(zip(own, ps)):
        if p != q:
            if p != 1:
                raise ValueError(f"keras.ops.{op}: cannot broadcast {x.shape} to {(None,) + tuple(ps)}")
            y = lx.take(y, np.zeros(q, np.int64), a)
    return y


def broadcast_to(x, shape):
    """keras.ops.broadcast_to; on a symbolic tensor the batch axis stays (shape's first entry None, -1 or the
    traced batch size None of keras.ops.shape(x)[0]), its sample axes copied out by Gather"""
    if not lx.sym(x) and not isinstance(x, Variable):
        x = np.asarray(x)
        own = (None,) * (len(shape) - x.ndim) + x.shape
        return np.broadcast_to(x, tuple(o if d in (None, -1) else d for o, d in zip(own, shape)))
    lx.batched("broadcast_to", x)
    shape = tuple(shape)
    if not shape or shape[0] not in (None, -1):
        lx.refuse("broadcast_to", f"to {shape}: the batch axis must come first as None or -1 (keras.ops.shape(x)[0] "
                  "in a traced call), it is never copied")
    if isinstance(x, Variable):   # a custom layer's weight, copied to every sample of the call's batch
        return _broadcast("broadcast_to", lx.weight("broadcast_to", x), shape[1:])
    return record(_broadcast("broadcast_to", x, shape[1:]), "BroadcastTo", NUMPY, {"shape": list(shape)}, [x])


# ---- triangles and diagonals ----

def _tri_mask(op, x, k, lower):
    lx.batched(op, x)
    if x.ndim < 3:
        lx.refuse(op, f"of {x.shape}: its last two axes would take in the batch axis; a batch of matrices "
                  "(rank >= 3) works")
    m, n = lx.static(op, x)[-2:]
    mask = np.tri(m, n, k) if lower else 1.0 - np.tri(m, n, k - 1)
    return lx.mul(x, mask)


def tril(x, k=0):
    """keras.ops.tril: x times the constant lower-triangle mask of its last two axes"""
    if not lx.sym(x):
        return np.tril(x, k)
    return record(_tri_mask("tril", x, int(k), True), "Tril", NUMPY, {"k": int(k)}, [x])


def triu(x, k=0):
    """keras.ops.triu: x times the constant upper-triangle mask of its last two axes"""
    if not lx.sym(x):
        return np.triu(x, k)
    return record(_tri_mask("triu", x, int(k), False), "Triu", NUMPY, {"k": int(k)}, [x])


def _diagonal(op, x, offset, axis1, axis2):
    a1, a2 = lx.sample_axis(op, x, axis1), lx.sample_axis(op, x, axis2)
    if a1 == a2:
        raise ValueError(f"keras.ops.{op}: axis1 and axis2 cannot be the same")
    ps = lx.static(op, x)
    rest = [d for d in range(len(ps)) if d not in (a1, a2)]
    y = lx.permute(x, rest + [a1, a2])
    m, n = ps[a1], ps[a2]
    rows = np.arange(max(0, -offset), min(m, n - offset))
    if rows.size == 0:
        lx.refuse(op, f"offset {offset} leaves an empty diagonal")
    y = lx.reshape(y, tuple(ps[d] for d in rest) + (m * n,))
    return lx.take(y, rows * n + rows + offset, len(rest))


def diagonal(x, offset=0, axis1=0, axis2=1):
    """keras.ops.diagonal of two sample axes: the axes moved last (Permute), merged, a Gather of the diagonal's
    positions; the diagonal is the last axis, as NumPy's"""
    if not lx.sym(x):
        return np.diagonal(x, offset, axis1, axis2)
    y = _diagonal("diagonal", x, int(offset), axis1, axis2)
    return record(y, "Diagonal", NUMPY, {"offset": int(offset), "axis1": axis1, "axis2": axis2}, [x])


def trace(x, offset=0, axis1=0, axis2=1):
    """keras.ops.trace: the sum of diagonal(x, offset, axis1, axis2) over its last axis"""
    if not lx.sym(x):
        return np.trace(x, offset, axis1, axis2)
    d = _diagonal("trace", x, int(offset), axis1, axis2)
    y = lx.reduce("sum", d, (len(d._ps) - 1,))
    return record(y, "Trace", NUMPY, {"offset": int(offset), "axis1": axis1, "axis2": axis2}, [x])


def diag(x, k=0):
    """keras.ops.diag (arrays only: a symbolic tensor's first axis is the batch's)"""
    if not lx.sym(x):
        return np.diag(x, k)
    lx.refuse("diag", "of a symbolic tensor it builds or reads a matrix whose first axis is the batch axis; use "
              "keras.ops.diagonal(x, axis1=1, axis2=2) for a batch of matrices")


def diagflat(x, k=0):
    """keras.ops.diagflat (arrays only: it flattens the batch axis too)"""
    if not lx.sym(x):
        return np.diagflat(x, k)
    lx.refuse("diagflat", "it flattens the batch axis with the others, mixing the samples")


# ---- joining and splitting ----

def _join(op, xs, axis):
    xs = lx.to_list(op, xs)
    lx.batched(op, *xs)
    return lx.concat(xs, lx.sample_axis(op, xs[0], axis))


def hstack(xs):
    """keras.ops.hstack: concatenate along axis 1 (tensors of rank >= 2)"""
    if not lx.sym(*xs):
        return np.hstack(xs)
    if xs[0].ndim < 2:
        lx.refuse("hstack", "of rank-1 tensors it joins along the batch axis")
    return record(_join("hstack", xs, 1), "Hstack", NUMPY, {}, [list(xs)])


def vstack(xs):
    """keras.ops.vstack (arrays only: on symbolic tensors it joins along the batch axis)"""
    if not lx.sym(*xs):
        return np.vstack(xs)
    lx.refuse("vstack", "it joins along the batch axis (axis 0); use keras.ops.concatenate(xs, axis=1)")


def dstack(xs):
    """keras.ops.dstack: concatenate along axis 2, rank-2 tensors (B, N) as (B, N, 1)"""
    if not lx.sym(*xs):
        return np.dstack(xs)
    xs = lx.to_list("dstack", xs)
    if any(t.ndim < 2 for t in xs):
        lx.refuse("dstack", "of rank-1 tensors it moves the batch axis")
    parts = [lx.reshape(t, lx.static("dstack", t) + (1,)) if t.ndim == 2 else t for t in xs]
    return record(_join("dstack", parts, 2), "Dstack", NUMPY, {}, [list(xs)])


def _bounds(op, n, ios, even):
    """the (start, stop) of each piece of an axis of length n split by indices_or_sections"""
    if isinstance(ios, (int, np.integer)):
        k = int(ios)
        if k <= 0:
            raise ValueError(f"keras.ops.{op}: the number of sections must be positive, got {k}")
        if even and n % k:
            raise ValueError(f"keras.ops.{op}: an axis of {n} does not split into {k} equal sections")
        size, extra = divmod(n, k)
        cuts = np.cumsum([0] + [size + (i < extra) for i in range(k)])
    else:
        cuts = [0] + [min(max(int(i), 0), n) for i in ios] + [n]
    return [(int(a), int(max(a, b))) for a, b in zip(cuts[:-1], cuts[1:])]


def _split(op, x, ios, axis, even, cls, cfg):
    a = lx.sample_axis(op, x, axis)
    n = lx.static(op, x, a)
    parts = []
    for start, stop in _bounds(op, n, ios, even):
        if stop == start:
            lx.refuse(op, f"an empty piece [{start}:{stop}] of axis {axis}")
        parts.append(lx.cut(x, a, start, stop) if (start, stop) != (0, n) else
                     Slice([0] * len(x._ps), [1] * len(x._ps), [-1] * len(x._ps))(x))
    return list(record(tuple(parts), cls, NUMPY, cfg, [x])) if len(parts) > 1 else parts


def _ios(ios):
    return ios if isinstance(ios, (int, np.integer)) else [int(i) for i in ios]


def split(x, indices_or_sections, axis=0):
    """keras.ops.split along a sample axis: one Slice per piece"""
    if not lx.sym(x):
        return np.split(x, indices_or_sections, axis)
    return _split("split", x, indices_or_sections, axis, True, "Split",
                  {"indices_or_sections": _ios(indices_or_sections), "axis": axis})


def array_split(x, indices_or_sections, axis=0):
    """keras.ops.array_split: split, sections of unequal sizes allowed (the first ones one longer)"""
    if not lx.sym(x):
        return np.array_split(x, indices_or_sections, axis)
    return _split("array_split", x, indices_or_sections, axis, False, "ArraySplit",
                  {"indices_or_sections": _ios(indices_or_sections), "axis": axis})


def hsplit(x, indices_or_sections):
    """keras.ops.hsplit: split along axis 1"""
    if not lx.sym(x):
        return np.hsplit(x, indices_or_sections)
    return _split("hsplit", x, indices_or_sections, 1, True, "Hsplit",
                  {"indices_or_sections": _ios(indices_or_sections)})


def vsplit(x, indices_or_sections):
    """keras.ops.vsplit (arrays only: it splits the batch axis)"""
    if not lx.sym(x):
        return np.vsplit(x, indices_or_sections)
    lx.refuse("vsplit", "it splits the batch axis (axis 0); use keras.ops.split(x, n, axis=1)")


def dsplit(x, indices_or_sections):
    """keras.ops.dsplit: split along axis 2"""
    if not lx.sym(x):
        return np.dsplit(x, indices_or_sections)
    return _split("dsplit", x, indices_or_sections, 2, True, "Dsplit",
                  {"indices_or_sections": _ios(indices_or_sections)})


def unstack(x, num=None, axis=0):
    """keras.ops.unstack along a sample axis: a Slice per position, the axis dropped; a stack along the batch
    axis (ops_stacked.py) along its axis 0: its tensors"""
    if isinstance(x, Stacked):
        stacked_axis0("unstack", axis, x.ndim)
        return list(x.xs)
    if not lx.sym(x):
        x = np.asarray(x)
        return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]
    a = lx.sample_axis("unstack", x, axis)
    n = lx.static("unstack", x, a)
    if num is not None and int(num) != n:
        raise ValueError(f"keras.ops.unstack: num={num} but axis {axis} of {x.shape} has {n}")
    keep = tuple(d for k, d in enumerate(x._ps) if k != a)
    parts = tuple(lx.reshape(lx.cut(x, a, i, i + 1), tuple(-1 if d is None else d for d in keep)) for i in range(n))
    return list(record(parts, "Unstack", CORE, {"num": num, "axis": axis}, [x])) if n > 1 else list(parts)


def append(x1, x2, axis=None):
    """keras.ops.append along a sample axis (axis=None flattens the batch axis too: refused)"""
    if not lx.sym(x1, x2):
        return np.append(x1, x2, axis)
    if not (isinstance(x1, KerasTensor) and isinstance(x2, KerasTensor)):
        lx.refuse("append", "of a tensor and an array (only of two symbolic tensors)")
    return record(_join("append", [x1, x2], axis), "Append", NUMPY, {"axis": axis}, [x1, x2])


def ravel(x):
    """keras.ops.ravel (arrays only: on a symbolic tensor it flattens the batch axis too)"""
    if not lx.sym(x):
        return np.ravel(x)
    lx.refuse("ravel", "it flattens the batch axis with the others, mixing the samples; use "
              "keras.ops.reshape(x, (-1, n)) or layers.Flatten()")


# ---- moving axes ----

def _perm(op, x, perm):
    if perm[0] != 0:
        lx.refuse(op, "it moves the batch axis; keep axis 0 in place")
    return lx.permute(x, [p - 1 for p in perm[1:]])


def moveaxis(x, source, destination):
    """keras.ops.moveaxis between sample axes: Permute"""
    if not lx.sym(x):
        return np.moveaxis(x, source, destination)
    lx.batched("moveaxis", x)
    src = [lx.axis_of("moveaxis", a, x.ndim) for a in _ax("moveaxis", source)]
    dst = [lx.axis_of("moveaxis", a, x.ndim) for a in _ax("moveaxis", destination)]
    if len(src) != len(dst):
        raise ValueError("keras.ops.moveaxis: source and destination must have the same number of axes")
    perm = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return record(_perm("moveaxis", x, perm), "Moveaxis", NUMPY, {"source": source, "destination": destination},
                  [x])


def swapaxes(x, axis1, axis2):
    """keras.ops.swapaxes of two sample axes: Permute"""
    if not lx.sym(x):
        return np.swapaxes(x, axis1, axis2)
    lx.batched("swapaxes", x)
    perm = list(range(x.ndim))
    a, b = lx.axis_of("swapaxes", axis1, x.ndim), lx.axis_of("swapaxes", axis2, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return record(_perm("swapaxes", x, perm), "Swapaxes", NUMPY, {"axis1": axis1, "axis2": axis2}, [x])


# ---- copies: tile, repeat, roll, pad ----

def _tiled_over_batch(x, reps):
    """np.tile(x, reps) with reps[0] the batch size: x's one row tiled by the rest, for every sample."""
    anchor = tracing_anchor()
    if anchor is None or len(reps) != x.ndim or x.shape[0] != 1 or None in reps[1:]:
        lx.refuse("tile", f"of an array of shape {x.shape} by {reps}: the batch size (None) repeats only an array of "
                  "one row, its other axes by numbers, inside a layer's call()")
    return lx.const(np.tile(x, [1] + [int(r) for r in reps[1:]])[0], anchor)


def tile(x, repeats):
    """keras.ops.tile: each sample axis copied out by a Gather of its positions repeated; the batch axis's
    repeat must be 1. An array of one row tiled by the batch size (ops.shape(t)[0], None while a call() is
    traced: keras.io's causal_attention_mask) is that row for every sample, a per-sample constant."""
    if not lx.sym(x):
        reps = [repeats] if isinstance(repeats, (int, np.integer)) else list(np.ravel(np.asarray(repeats, object)))
        if reps and reps[0] is None:
            return _tiled_over_batch(np.asarray(x), reps)
        return np.tile(x, repeats)
    lx.batched("tile", x)
    reps = [int(repeats)] if isinstance(repeats, (int, np.integer)) else [int(r) for r in repeats]
    reps = [1] * (x.ndim - len(reps)) + reps
    if len(reps) > x.ndim or reps[0] != 1:
        lx.refuse("tile", f"repeats {repeats} for {x.shape}: the batch axis (the first of x's {x.ndim} axes) must "
                  "be repeated once")
    y = x
    for a, r in enumerate(reps[1:]):
        if r != 1:
            y = lx.take(y, np.tile(np.arange(lx.static("tile", x, a)), r), a)
    return record(y, "Tile", NUMPY, {"repeats": reps}, [x])


def repeat(x, repeats, axis=None):
    """keras.ops.repeat along a sample axis: a Gather of each position repeated"""
    if not lx.sym(x):
        return np.repeat(x, repeats, axis)
    a = lx.sample_axis("repeat", x, axis)
    n = lx.static("repeat", x, a)
    reps = repeats if isinstance(repeats, (int, np.integer)) else [int(r) for r in repeats]
    return record(lx.take(x, np.repeat(np.arange(n), reps), a), "Repeat", NUMPY, {"repeats": reps, "axis": axis},
                  [x])


def roll(x, shift, axis=None):
    """keras.ops.roll along sample axes: a Gather of the rotated positions"""
    if not lx.sym(x):
        return np.roll(x, shift, axis)
    axes = _ax("roll", axis) if axis is not None else None
    if axes is None:
        lx.sample_axis("roll", x, None)
    shifts = _ax("roll", shift)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"keras.ops.roll: shift {shift} and axis {axis} differ in length")
    y = x
    for s, ax in zip(shifts, axes):
        a = lx.sample_axis("roll", x, ax)
        n = lx.static("roll", x, a)
        y = lx.take(y, (np.arange(n) - int(s)) % n, a)
    return record(y, "Roll", NUMPY, {"shift": shift if isinstance(shift, int) else list(shifts), "axis": axis}, [x])


_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad_width(op, pad_width, ndim):
    pw = np.asarray(pad_width, np.int64)
    pw = np.broadcast_to(pw.reshape((1, -1)) if pw.ndim < 2 else pw, (ndim, 2)) if pw.size in (1, 2) or \
        pw.ndim == 2 and pw.shape[0] == 1 else pw
    if pw.shape != (ndim, 2) or (pw < 0).any():
        raise ValueError(f"keras.ops.{op}: pad_width {pad_width!r} is not (before, after) per axis of {ndim}")
    return pw


def pad(x, pad_width, mode="constant", constant_values=None):
    """keras.ops.pad of sample axes (the batch axis's (0, 0)): mode "constant" concatenates blocks of
    full_like(constant_values); "edge", "reflect", "symmetric", "wrap" are a Gather of NumPy's padded positions"""
    if not lx.sym(x):
        kw = {"constant_values": constant_values or 0} if mode == "constant" else {}
        return np.pad(x, pad_width, mode=mode, **kw)
    lx.batched("pad", x)
    if mode not in ("constant",) + _INDEX_MODES:
        lx.refuse("pad", f"mode={mode!r} (constant, {', '.join(_INDEX_MODES)})")
    if constant_values is not None and mode != "constant":
        raise ValueError("keras.ops.pad: constant_values only with mode='constant'")
    pw = _pad_width("pad", pad_width, x.ndim)
    if pw[0].any():
        lx.refuse("pad", "of the batch axis; its pad_width must be (0, 0)")
    c = float(constant_values or 0.0)
    y = x
    for a, (before, after) in enumerate(pw[1:]):
        if before == after == 0:
            continue
        n = lx.static("pad", x, a)
        if mode != "constant":
            y = lx.take(y, np.pad(np.arange(n), (int(before), int(after)), mode=mode), a)
            continue
        blocks = [Unary("full_like", c)(lx.take(y, np.zeros(k, np.int64), a)) if k else None for k in (before, after)]
        y = lx.concat([b for b in (blocks[0], y, blocks[1]) if b is not None], a)
    return record(y, "Pad", NUMPY, {"pad_width": pw.tolist(), "mode": mode}, [x, constant_values])


# ---- windows: slice, slice_update, extract_sequences ----

def _start_shape(op, x, start_indices, shape):
    starts = [int(s) for s in np.asarray(start_indices).reshape(-1)]
    if len(starts) != x.ndim or starts[0] != 0:
        lx.refuse(op, f"start_indices {start_indices!r}: one per axis of {x.shape}, the batch axis's 0")
    return starts


def slice(inputs, start_indices, shape):   # noqa: A001 - keras.ops' name
    """keras.ops.slice with constant start_indices (the batch axis's 0) and shape (its first entry None or -1:
    the whole batch): Slice"""
    if isinstance(inputs, Variable):
        return _slice_weight(inputs, start_indices, shape)
    if not lx.sym(inputs):
        idx = tuple(np.s_[s:None if n in (None, -1) else s + n]
                    for s, n in zip(np.asarray(start_indices).reshape(-1), shape))
        return np.asarray(inputs)[idx]
    lx.batched("slice", inputs)
    starts = _start_shape("slice", inputs, start_indices, shape)
    shape = list(shape)
    if len(shape) != inputs.ndim or shape[0] not in (None, -1):
        lx.refuse("slice", f"shape {tuple(shape)}: one entry per axis, the batch axis's None or -1")
    ps = lx.static("slice", inputs)
    for s, n, d in zip(starts[1:], shape[1:], ps):
        if n is None or s < 0 or n < 1 or s + n > d:
            raise ValueError(f"keras.ops.slice: [{s}:{s}+{n}] does not fit an axis of {d}")
    y = Slice(starts[1:], [1] * len(ps), shape[1:])(inputs)
    return record(y, "Slice", CORE, {"shape": shape}, [inputs, starts])


def _slice_weight(v, start_indices, shape):
    """keras.ops.slice of a custom layer's weight (no batch axis, as Keras's): the whole weight is the weight;
    a window of it, that window of its value in every sample (a tensor with the batch axis)"""
    starts = [int(s) for s in np.asarray(start_indices).reshape(-1)]
    shape = [d if n in (None, -1) else int(n) for n, d in zip(shape, v.shape)]
    if len(starts) != len(v.shape) or len(shape) != len(v.shape) or any(
            s < 0 or n < 1 or s + n > d for s, n, d in zip(starts, shape, v.shape)):
        raise ValueError(f"keras.ops.slice: start_indices {tuple(starts)} and shape {tuple(shape)} do not fit the "
                         f"weight {v.name!r} of shape {v.shape}")
    if starts == [0] * len(starts) and tuple(shape) == tuple(v.shape):
        return v
    return Slice(starts, [1] * len(starts), shape)(lx.weight("slice", v))


def slice_update(inputs, start_indices, updates):
    """keras.ops.slice_update: inputs with a window replaced by updates (a symbolic tensor of the whole batch):
    inputs * (1 - window) + updates padded with zeros to inputs' shape"""
    if not lx.sym(inputs, updates):
        out = np.array(inputs, copy=True)
        idx = tuple(np.s_[s:s + n] for s, n in zip(np.asarray(start_indices).reshape(-1), np.shape(updates)))
        out[idx] = updates
        return out
    if not isinstance(inputs, KerasTensor) or not isinstance(updates, KerasTensor):
        lx.refuse("slice_update", "inputs and updates must both be symbolic tensors")
    lx.batched("slice_update", inputs, updates)
    starts = _start_shape("slice_update", inputs, start_indices, None)
    ps, us = lx.static("slice_update", inputs), lx.static("slice_update", updates)
    if len(us) != len(ps) or any(s + u > d for s, u, d in zip(starts[1:], us, ps)):
        raise ValueError(f"keras.ops.slice_update: updates {updates.shape} at {starts} do not fit {inputs.shape}")
    window = np.zeros(ps, np.float32)
    window[tuple(np.s_[s:s + u] for s, u in zip(starts[1:], us))] = 1.0
    padded = _zero_pad(updates, starts[1:], ps)
    y = lx.add(lx.mul(inputs, 1.0 - window), padded)
    return record(y, "SliceUpdate", CORE, {}, [inputs, starts, updates])


def _zero_pad(u, starts, ps):
    y = u
    for a, (s, d) in enumerate(zip(starts, ps)):
        n = u._ps[a]
        blocks = [Unary("full_like", 0.0)(lx.take(y, np.zeros(k, np.int64), a)) if k else None
                  for k in (s, d - s - n)]
        y = lx.concat([b for b in (blocks[0], y, blocks[1]) if b is not None], a)
    return y


def extract_sequences(x, sequence_length, sequence_stride):
    """keras.ops.extract_sequences: frames of the last axis, (..., frames, sequence_length): a Gather of the
    frames' positions"""
    L, S = int(sequence_length), int(sequence_stride)
    if not lx.sym(x):
        x = np.asarray(x)
        n = 1 + (x.shape[-1] - L) // S
        return x[..., np.arange(L)[None, :] + S * np.arange(n)[:, None]]
    a = lx.sample_axis("extract_sequences", x, -1)
    n = lx.static("extract_sequences", x, a)
    if not 1 <= L <= n or S < 1:
        raise ValueError(f"keras.ops.extract_sequences: sequence_length {L} / stride {S} for a last axis of {n}")
    frames = 1 + (n - L) // S
    idx = np.arange(L)[None, :] + S * np.arange(frames)[:, None]
    return record(lx.take(x, idx, a), "ExtractSequences", MATH,
                  {"sequence_length": L, "sequence_stride": S}, [x])


# ---- depth_to_space, space_to_depth: Reshape and Permute ----

def _nhwc(op, x, data_format):
    lx.batched(op, x)
    if x.ndim != 4:
        lx.refuse(op, f"of {x.shape}: a batch of images (B, H, W, C)")
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"keras.ops.{op}: data_format must be 'channels_last' or 'channels_first', got "
                         f"{data_format!r}")
    return lx.permute(x, (1, 2, 0)) if data_format == "channels_first" else x


def _back(y, data_format):
    return lx.permute(y, (2, 0, 1)) if data_format == "channels_first" else y


def depth_to_space(x, block_size, data_format="channels_last"):
    """keras.ops.nn.depth_to_space: (H, W, b*b*c) -> (H*b, W*b, c)"""
    b = int(block_size)
    if not lx.sym(x):
        x = np.asarray(x)
        if data_format == "channels_first":
            x = np.transpose(x, (0, 2, 3, 1))
        B, H, W, C = x.shape
        y = x.reshape(B, H, W, b, b, C // (b * b)).transpose(0, 1, 3, 2, 4, 5).reshape(B, H * b, W * b, C // (b * b))
        return np.transpose(y, (0, 3, 1, 2)) if data_format == "channels_first" else y
    h = _nhwc("depth_to_space", x, data_format)
    H, W, C = lx.static("depth_to_space", h)
    if C % (b * b):
        raise ValueError(f"keras.ops.depth_to_space: {C} channels do not divide by block_size**2 = {b * b}")
    y = lx.permute(lx.reshape(h, (H, W, b, b, C // (b * b))), (0, 2, 1, 3, 4))
    y = _back(lx.reshape(y, (H * b, W * b, C // (b * b))), data_format)
    return record(y, "DepthToSpace", NN, {"block_size": b, "data_format": data_format}, [x])


def space_to_depth(x, block_size, data_format="channels_last"):
    """keras.ops.nn.space_to_depth: (H, W, c) -> (H/b, W/b, b*b*c)"""
    b = int(block_size)
    if not lx.sym(x):
        x = np.asarray(x)
        if data_format == "channels_first":
            x = np.transpose(x, (0, 2, 3, 1))
        B, H, W, C = x.shape
        y = x.reshape(B, H // b, b, W // b, b, C).transpose(0, 1, 3, 2, 4, 5).reshape(B, H // b, W // b, b * b * C)
        return np.transpose(y, (0, 3, 1, 2)) if data_format == "channels_first" else y
    h = _nhwc("space_to_depth", x, data_format)
    H, W, C = lx.static("space_to_depth", h)
    if H % b or W % b:
        raise ValueError(f"keras.ops.space_to_depth: ({H}, {W}) does not divide by block_size {b}")
    y = lx.permute(lx.reshape(h, (H // b, b, W // b, b, C)), (0, 2, 1, 3, 4))
    y = _back(lx.reshape(y, (H // b, W // b, b * b * C)), data_format)
    return record(y, "SpaceToDepth", NN, {"block_size": b, "data_format": data_format}, [x])
