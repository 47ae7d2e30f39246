"""keras.ops.linalg (and its names at keras.ops' top level) beyond the vector
norms: cholesky, cholesky_inverse, det, eig, eigh, inv, lstsq, lu_factor,
qr, slogdet, logdet, solve, solve_triangular, svd, matrix_rank, pinv.

On arrays: NumPy's LAPACK, what Keras's JAX backend calls, batched over the
leading axes as Keras is (float32 stays float32; lu_factor's pivots are
LAPACK getrf's, 0-based, as jax.scipy.linalg.lu_factor gives them). On a
symbolic tensor each raises OpNotSupportedError naming the op: a matrix
factorization or solve per sample is no engine primitive (its gradient is a
solve of its own), so a model cannot hold one; compute it on arrays before
or after the model (ops_lax.arrays_only)."""

import numpy as np

from . import ops_lax as lx

_WHY = ("a matrix factorization or solve per sample is no engine primitive (boundfit cannot plan or differentiate "
        "it); compute it on arrays (NumPy values) before or after the model")


def _float(x):
    x = np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(np.float32)


def _square(op, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"keras.ops.{op}: x must be (..., N, N) square matrices, got shape {x.shape}")
    return x


def _linalg(name):
    return lx.arrays_only(name, _WHY)


@_linalg("cholesky")
def cholesky(x, upper=False):
    """the lower (upper=True: upper) Cholesky factor; a matrix that is not positive definite raises ValueError"""
    try:
        c = np.linalg.cholesky(_square("cholesky", _float(x)))
    except np.linalg.LinAlgError as e:
        raise ValueError("Cholesky decomposition failed. The input might not be a valid positive definite matrix.") \
            from e
    return np.swapaxes(c, -1, -2).conj() if upper else c


@_linalg("cholesky_inverse")
def cholesky_inverse(x, upper=False):
    """the inverse of A from its Cholesky factor x (lower, or upper=True)"""
    x = _square("cholesky_inverse", _float(x))
    inv_chol = np.linalg.inv(x)
    t = np.swapaxes(inv_chol, -1, -2)
    return inv_chol @ t if upper else t @ inv_chol


@_linalg("det")
def det(x):
    return np.linalg.det(_square("det", _float(x)))


@_linalg("eig")
def eig(x):
    """(eigenvalues, eigenvectors), complex"""
    w, v = np.linalg.eig(_square("eig", _float(x)))
    c = np.complex64 if np.asarray(x).dtype != np.float64 else np.complex128
    return w.astype(c), v.astype(c)


@_linalg("eigh")
def eigh(x):
    """(eigenvalues ascending, eigenvectors) of symmetric matrices (the lower triangle read)"""
    return tuple(np.linalg.eigh(_square("eigh", _float(x))))


@_linalg("inv")
def inv(x):
    return np.linalg.inv(_square("inv", _float(x)))


@_linalg("lstsq")
def lstsq(a, b, rcond=None):
    """the least-squares solution of a @ x = b (a (M, N), b (M,) or (M, K))"""
    a, b = _float(a), _float(b)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(f"keras.ops.lstsq: a (M, N) and b (M,) or (M, K), got {a.shape} and {b.shape}")
    rcond = np.finfo(a.dtype).eps * max(a.shape) if rcond is None else rcond
    return np.linalg.lstsq(a, b, rcond=rcond)[0]


def _lu(a):
    """LAPACK getrf of one (M, N) matrix: partial pivoting, the first largest |pivot|; (lu, 0-based pivots)"""
    a = a.copy()
    m, n = a.shape
    piv = np.zeros(min(m, n), np.int32)
    for k in range(min(m, n)):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        piv[k] = p
        if p != k:
            a[[k, p]] = a[[p, k]]
        if a[k, k] != 0:
            a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a, piv


@_linalg("lu_factor")
def lu_factor(x):
    """(lu, pivots) as jax.scipy.linalg.lu_factor: L (unit diagonal, below) and U in one matrix, the row swapped
    with row i at step i; batched over leading axes"""
    x = _float(x)
    if x.ndim < 2:
        raise ValueError(f"keras.ops.lu_factor: x must have rank >= 2, got shape {x.shape}")
    flat = x.reshape((-1,) + x.shape[-2:])
    parts = [_lu(m) for m in flat]
    return (np.stack([p[0] for p in parts]).reshape(x.shape),
            np.stack([p[1] for p in parts]).reshape(x.shape[:-2] + (min(x.shape[-2:]),)))


@_linalg("qr")
def qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"keras.ops.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return tuple(np.linalg.qr(_float(x), mode=mode))


@_linalg("slogdet")
def slogdet(x):
    """(sign, log |det|)"""
    return tuple(np.linalg.slogdet(_square("slogdet", _float(x))))


@_linalg("logdet")
def logdet(x):
    """log |det x| (of Hermitian positive definite matrices: log det x)"""
    return np.linalg.slogdet(_square("logdet", _float(x)))[1]


@_linalg("solve")
def solve(a, b):
    a, b = _square("solve", _float(a)), _float(b)
    if b.ndim == a.ndim - 1:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


@_linalg("solve_triangular")
def solve_triangular(a, b, lower=False):
    """x with a @ x = b, reading only a's lower (lower=True) or upper triangle"""
    a, b = _square("solve_triangular", _float(a)), _float(b)
    return solve(np.tril(a) if lower else np.triu(a), b)


@_linalg("svd")
def svd(x, full_matrices=True, compute_uv=True):
    out = np.linalg.svd(_float(x), full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


@_linalg("matrix_rank")
def matrix_rank(x, tol=None):
    x = _float(x)
    if x.ndim < 2:
        raise ValueError(f"keras.ops.matrix_rank: x must have rank >= 2, got shape {x.shape}")
    if tol is None:   # jnp's default: the largest singular value * max(M, N) * eps
        s = np.linalg.svd(x, compute_uv=False)
        tol = s.max(axis=-1, keepdims=True) * max(x.shape[-2:]) * np.finfo(x.dtype).eps
        return np.sum(s > tol, axis=-1).astype(np.int32)
    return np.linalg.matrix_rank(x, tol=tol).astype(np.int32)


@_linalg("pinv")
def pinv(x, rcond=None):
    x = _float(x)
    if x.ndim < 2:
        raise ValueError(f"keras.ops.pinv: x must have rank >= 2, got shape {x.shape}")
    rcond = 10 * max(x.shape[-2:]) * np.finfo(x.dtype).eps if rcond is None else rcond
    return np.linalg.pinv(x, rcond=rcond)


NAMES = ("cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "lstsq", "lu_factor", "qr", "slogdet", "logdet",
         "solve", "solve_triangular", "svd", "matrix_rank", "pinv")
