"""keras.ops.rearrange (einops' pattern "b (h w) c -> b h w c", sizes of split
axes by keyword): a reshape splitting the input's groups into single axes, a
transpose into the output's order, a reshape joining the output's groups.
On arrays NumPy; on a symbolic tensor Reshape and Permute nodes, the batch
axis named alone first on both sides (it cannot move or merge)."""

import re

import numpy as np

from . import ops_lax as lx
from .layers.opnode import record


def _groups(side):
    """'b (h w) c' -> [['b'], ['h', 'w'], ['c']]"""
    out = []
    for tok in re.findall(r"\([^()]*\)|[^\s()]+", side):
        names = tok[1:-1].split() if tok.startswith("(") else [tok]
        if not all(re.fullmatch(r"\w+", n) for n in names):
            raise ValueError(f"keras.ops.rearrange: pattern axis {tok!r} is not a name or a (group of names)")
        out.append(names)
    return out


def _plan(pattern, shape, axes_lengths):
    """the split sizes, the transpose order and the output shape of `pattern` on `shape`"""
    if not isinstance(pattern, str) or pattern.count("->") != 1:
        raise ValueError(f"keras.ops.rearrange: pattern must be 'inputs -> outputs', got {pattern!r}")
    src, dst = (_groups(s) for s in pattern.split("->"))
    flat_in, flat_out = [n for g in src for n in g], [n for g in dst for n in g]
    if sorted(flat_in) != sorted(flat_out) or len(set(flat_in)) != len(flat_in):
        raise ValueError(f"keras.ops.rearrange: pattern {pattern!r} must name each axis once on each side")
    if len(src) != len(shape):
        raise ValueError(f"keras.ops.rearrange: pattern {pattern!r} has {len(src)} input axes, the tensor "
                         f"{len(shape)} (shape {tuple(shape)})")
    sizes = {}
    for g, dim in zip(src, shape):
        known = [n for n in g if n in axes_lengths]
        free = [n for n in g if n not in axes_lengths]
        if len(free) > 1:
            raise ValueError(f"keras.ops.rearrange: axes_lengths must give all but one of {g}")
        sizes.update({n: int(axes_lengths[n]) for n in known})
        if free:
            part = int(np.prod([sizes[n] for n in known]))
            sizes[free[0]] = None if dim is None else dim // part
        if dim is not None and None not in (sizes[n] for n in g) and int(np.prod([sizes[n] for n in g])) != dim:
            raise ValueError(f"keras.ops.rearrange: axes {g} of sizes {[sizes[n] for n in g]} do not make the "
                             f"tensor's axis of size {dim}")
    split = [sizes[n] for n in flat_in]
    perm = [flat_in.index(n) for n in flat_out]
    out = [None if None in [sizes[n] for n in g] else int(np.prod([sizes[n] for n in g])) for g in dst]
    return src, dst, split, perm, out


def rearrange(tensor, pattern, **axes_lengths):
    """keras.ops.rearrange: einops' rearrange by reshape / transpose / reshape"""
    if not lx.sym(tensor):
        x = np.asarray(tensor)
        _, _, split, perm, out = _plan(pattern, x.shape, axes_lengths)
        return np.transpose(x.reshape(split), perm).reshape(out)
    src, dst, split, perm, out = _plan(pattern, tensor.shape, axes_lengths)
    if len(src[0]) != 1 or dst[0] != src[0]:
        lx.refuse("rearrange", f"pattern {pattern!r} moves or splits the batch axis; name it alone first on both "
                  "sides")
    if None in split[1:]:
        lx.refuse("rearrange", f"of {tensor.shape}: the sample axes need static sizes")
    y = lx.permute(lx.reshape(tensor, split[1:]), [p - 1 for p in perm[1:]])
    y = lx.reshape(y, out[1:])
    return record(y, "Rearrange", "keras.src.ops.einops", dict(axes_lengths), [tensor, pattern])
