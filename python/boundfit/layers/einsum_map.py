"""The einsum equations of a tensor and a kernel that map onto a matrix
product of the last axis (EinsumDense, keras.ops.einsum of a tensor and an
array): the input's axes split into the batch (the first label, or a leading
...), free axes (kept in the output) and contracted axes (shared with the
kernel); the kernel's into contracted and new axes (kept in the output).
The map: permute the input to (free..., contracted...), merge the contracted
axes (K), one (K, N) product, split N into the new axes, permute to the
output's order. An axis in the input, kernel and output at once, an axis
summed away without the kernel, or a kernel whose new axes come before its
contracted ones (EinsumDense) is refused naming the equation."""

import math
import re
from dataclasses import dataclass

from ..errors import OpNotSupportedError
from .reshaping import Permute, Reshape


@dataclass
class EinsumMap:
    in_perm: tuple       # per-sample input axes -> (free..., contracted in the kernel's order)
    free: tuple          # the free axes' sizes (None: variable)
    K: int               # the contracted axes' sizes multiplied
    new: tuple           # the new axes' sizes, in the kernel's order
    out_perm: tuple      # (free..., new...) -> the output's per-sample order
    kernel_labels: str   # the kernel's labels, contracted then new where kernel_order is True
    kernel_shape: tuple  # the kernel's shape in its labels' order
    kernel_perm: tuple   # kernel axes -> (contracted..., new...)
    out_shape: tuple     # per-sample output shape
    out_labels: str      # the output's labels (no batch, no ...), for the bias
    out_dims: dict       # label -> its size in the output

    @property
    def N(self):
        return math.prod(self.new)

    @property
    def kernel_order(self):
        """the kernel's axes are its contracted then its new ones (a plain reshape into (K, N))"""
        return self.kernel_perm == tuple(range(len(self.kernel_perm)))


def _refuse(who, equation, why):
    raise OpNotSupportedError(f"{who}: the equation {equation!r} {why}; boundfit maps equations whose kernel axes "
                              "are each contracted with the input or new in the output (as 'ab,bc->ac', "
                              "'abc,cd->abd', 'abc,cde->abde', '...b,bc->...c', 'abcd,cde->abe')")


def einsum_map(who, equation, ps, partial_output=None, kernel_shape=None):
    """The map of `equation` for per-sample input shape ps; the new axes' sizes from partial_output (EinsumDense's
    output_shape, Keras's: the output without the batch axis and a leading ...) or from kernel_shape (an array)."""
    eq = str(equation).replace(" ", "")
    m, left = re.fullmatch(r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", eq), False
    if m is None:
        m, left = re.fullmatch(r"\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)", eq), True
    if m is None:
        raise ValueError(f"{who}: invalid einsum equation {equation!r}: boundfit takes [X],[Y]->[Z] and "
                         "...[X],[Y]->...[Z] (an ... on the right is not supported)")
    I, W, O = m.groups()
    if any(len(set(s)) != len(s) for s in (I, W, O)):
        _refuse(who, equation, "repeats a label within an operand (a diagonal)")
    elided = len(ps) + 1 - len(I)
    if left and elided < 1 or not left and elided != 0:
        raise ValueError(f"{who}: the equation {equation!r} does not fit an input of shape {(None,) + tuple(ps)}")
    if left:
        anon = tuple(f"~{i}" for i in range(elided - 1))
        ins, outs = anon + tuple(I), anon + tuple(O)
    else:
        if I[0] != O[0] or I[0] in W:
            _refuse(who, equation, "does not keep the input's first axis (the batch) as the output's first")
        ins, outs = tuple(I[1:]), tuple(O[1:])
    dims = dict(zip(ins, ps))
    out_dims = {l: dims[l] for l in outs if l in dims}
    if partial_output is not None:
        given = tuple(partial_output) if isinstance(partial_output, (list, tuple)) else (partial_output,)
        named = [l for l in outs if not l.startswith("~")]
        if len(given) != len(named):
            raise ValueError(f"{who}: output_shape {tuple(given)} must give the {len(named)} output axes "
                             f"{''.join(named)!r} of {equation!r} (without the batch axis)")
        for l, d in zip(named, given):
            if l in dims and d is not None and d != dims[l]:
                raise ValueError(f"{who}: output_shape gives axis {l!r} size {d}, the input has {dims[l]}")
            out_dims[l] = dims[l] if l in dims else d
    for l in W:
        if l in ins and l in outs:
            _refuse(who, equation, f"keeps axis {l!r} of the input and the kernel in the output (a product per "
                    "position of that axis)")
        if l not in ins and l not in outs:
            raise ValueError(f"{who}: kernel axis {l!r} of {equation!r} is in neither the input nor the output")
    for l in ins:
        if l not in W and l not in outs:
            _refuse(who, equation, f"sums input axis {l!r} away without the kernel")
    for l in outs:
        if l not in ins and l not in W:
            raise ValueError(f"{who}: output axis {l!r} of {equation!r} is in neither the input nor the kernel")
    contracted = [l for l in W if l in ins]
    new = [l for l in W if l not in ins]
    if kernel_shape is not None:
        if len(kernel_shape) != len(W) or any(dims[l] != s for l, s in zip(W, kernel_shape) if l in dims):
            raise ValueError(f"{who}: an operand of shape {tuple(kernel_shape)} does not fit {W!r} of {equation!r} "
                             f"with an input of shape {(None,) + tuple(ps)}")
        out_dims.update({l: s for l, s in zip(W, kernel_shape) if l not in dims})
    if any(dims[l] is None for l in contracted) or any(not isinstance(out_dims.get(l), int) for l in new):
        raise ValueError(f"{who}: the contracted and new axes of {equation!r} need known sizes (input shape "
                         f"{(None,) + tuple(ps)}, output {[out_dims.get(l) for l in outs]})")
    free = [l for l in ins if l in outs]
    mid = free + new
    return EinsumMap(in_perm=tuple(ins.index(l) for l in free + contracted), free=tuple(dims[l] for l in free),
                     K=math.prod(dims[l] for l in contracted), new=tuple(out_dims[l] for l in new),
                     out_perm=tuple(mid.index(l) for l in outs), kernel_labels=W,
                     kernel_shape=tuple(dims[l] if l in dims else out_dims[l] for l in W),
                     kernel_perm=tuple(W.index(l) for l in contracted + new),
                     out_shape=tuple(out_dims[l] for l in outs), out_labels=O,
                     out_dims=out_dims)


def is_identity(perm):
    return tuple(perm) == tuple(range(len(perm)))


def apply(who, x, mp, product):
    """The graph of the map on symbolic x: Permute, Reshape to (free..., K), product (a (K, N) product of the last
    axis), Reshape to (free..., new...), Permute to the output's order; each only where needed."""
    if not is_identity(mp.in_perm):
        x = Permute(tuple(a + 1 for a in mp.in_perm))(x)
    merged = len(mp.in_perm) - len(mp.free) != 1 or not mp.in_perm
    split = len(mp.new) != 1
    if (merged or split) and sum(d is None for d in mp.free) > 1:
        raise ValueError(f"{who}: more than one variable-length axis ({(None,) + mp.free}) cannot be reshaped")
    free = tuple(-1 if d is None else d for d in mp.free)
    if merged:
        x = Reshape(free + (mp.K,))(x)
    y = product(x)
    if split:
        y = Reshape(free + mp.new)(y)
    if not is_identity(mp.out_perm):
        y = Permute(tuple(a + 1 for a in mp.out_perm))(y)
    return y
