"""keras.ops.einsum (re-exported by ops.py): on arrays NumPy's; on symbolic
tensors the two-operand cases that are one matrix product per sample:

- a tensor and an array (the kernel): layers/einsum_map.py's map (the
  input permuted to (free..., contracted), one (K, N) product with the array,
  a per-sample constant (Const), split and permuted to the output's order);
- two tensors of one batch (the first label of both and of the output),
  each a (rows, cols) matrix per sample, one label contracted: MatMul with
  the transposes the labels ask for ('bij,bjk->bik', 'bij,bkj->bik',
  'bji,bjk->bki', ...).

Recorded as Keras's Einsum operation node (layers/opnode.py). Any other
einsum on a symbolic tensor raises OpNotSupportedError naming the equation."""

import numpy as np

from .errors import OpNotSupportedError
from .layers.einsum_map import apply, einsum_map
from .layers.emath import MatMul
from .layers.node import KerasTensor, tracing_where
from .layers.opnode import record
from .layers.reshaping import Const, Reshape

NUMPY = "keras.src.ops.numpy"


def _refuse(subscripts, hint):
    raise OpNotSupportedError(f"keras.ops.einsum({subscripts!r}, ...) on a symbolic tensor{tracing_where()} is not "
                              f"supported by boundfit's graphs: {hint}")


def einsum(subscripts, *operands):
    """keras.ops.einsum; on symbolic tensors: a tensor and an array, or two batches of matrices (one product per
    sample)."""
    if not any(isinstance(x, KerasTensor) for x in operands):
        return np.einsum(subscripts, *operands)
    if len(operands) != 2:
        _refuse(subscripts, f"{len(operands)} operands; boundfit takes two")
    x, y = operands
    if isinstance(x, KerasTensor) and isinstance(y, KerasTensor):
        out = _two_tensors(subscripts, x, y)
    elif isinstance(x, KerasTensor) and isinstance(y, (np.ndarray, list, tuple, float, int)):
        out = _tensor_and_array(subscripts, x, np.asarray(y, np.float32))
    else:
        _refuse(subscripts, "the symbolic tensor must be the first operand, an array (or another batch of "
                "matrices) the second")
    return record(out, "Einsum", NUMPY, {"subscripts": subscripts}, [x, y])


def _tensor_and_array(subscripts, x, a):
    mp = einsum_map("keras.ops.einsum", subscripts, x._ps, kernel_shape=a.shape)
    kernel = np.transpose(a, mp.kernel_perm).reshape(mp.K, mp.N)

    def product(t):   # (..., K) @ (K, N): per sample (rows, K) @ (K, N)
        rows = t._ps[:-1]
        if None in rows:
            _refuse(subscripts, f"a variable-length axis in {x.shape}")
        flat = Reshape((int(np.prod(rows)) if rows else 1, mp.K))(t) if len(rows) != 1 else t
        z = MatMul()([flat, Const(kernel)(flat)])
        return Reshape(tuple(rows) + (mp.N,))(z) if len(rows) != 1 else z
    return apply("keras.ops.einsum", x, mp, product)


def _two_tensors(subscripts, x, y):
    try:
        ins, out = subscripts.replace(" ", "").split("->")
        a, b = ins.split(",")
    except ValueError:
        _refuse(subscripts, "an explicit 'ab,cd->ef' equation of two operands is needed")
    if not (len(a) == len(b) == len(out) == 3 and a[0] == b[0] == out[0]) or len(x._ps) != 2 or len(y._ps) != 2:
        _refuse(subscripts, "of two symbolic tensors, boundfit takes two batches of matrices with the batch label "
                "first in both and in the output ('bij,bjk->bik')")
    shared = set(a[1:]) & set(b[1:])
    if len(shared) != 1 or shared & set(out) or len(set(a[1:] + b[1:])) != 3:
        _refuse(subscripts, "one label contracted between the two matrices, the other two kept")
    c = shared.pop()
    ta, tb = a[1] == c, b[2] == c
    fa, fb = a[2] if ta else a[1], b[1] if tb else b[2]
    if out[1:] == fa + fb:
        return MatMul(transpose_a=ta, transpose_b=tb)([x, y])
    if out[1:] == fb + fa:                               # (op(x) op(y))^T = op(y)^T op(x)^T
        return MatMul(transpose_a=not tb, transpose_b=not ta)([y, x])
    _refuse(subscripts, "the output must hold the two kept labels")
