"""keras.ops control flow (re-exported by ops.py): cond, switch, fori_loop,
while_loop, scan, associative_scan, map, vectorized_map, vectorize,
custom_gradient; jvp refused.

On values Python decides (a bool or a number, an array's value) each runs
as Keras runs it on values, and the functions it calls may build symbolic
tensors: the branch taken, or the loop unrolled into the graph (at most
MAX_UNROLL steps, which the plan then holds like any layers). What the
engine would have to decide from values it computes is refused by name
(OpNotSupportedError): a predicate, index or loop bound that is a symbolic
tensor (a graph has no branches or loops; keras.ops.where computes both
sides), map / vectorized_map / scan over a symbolic tensor's leading axis
(the batch's: a model already maps over its samples), scan outputs stacked
before the batch axis, a custom gradient function (the engine's backward
pass differentiates its own primitives, never Python) and jvp (forward-mode
differentiation of a Python function, which boundfit has no machinery for;
refused on every call)."""

import numpy as np

from . import ops_lax as lx
from .errors import OpNotSupportedError

MAX_UNROLL = 1024   # loop steps a graph may unroll


def _decided(op, v, what):
    """v as a Python value; a symbolic tensor refused by name"""
    if lx.sym(v):
        lx.refuse(op, f"{what} is a symbolic tensor: a graph has no branches or loops decided by its values "
                  "(keras.ops.where computes both sides and picks per element)")
    return v


def _unrolled(op, n, state):
    if n > MAX_UNROLL and lx.sym(state):
        lx.refuse(op, f"{n} steps on symbolic tensors: a graph unrolls at most {MAX_UNROLL}")


def cond(pred, true_fn, false_fn):
    """true_fn() if pred else false_fn(), pred a Python or array value"""
    return true_fn() if bool(np.asarray(_decided("cond", pred, "pred"))) else false_fn()


def switch(index, branches, *operands):
    """branches[index](*operands), index clamped to the branches as JAX's switch does"""
    i = int(np.asarray(_decided("switch", index, "index")))
    return branches[min(max(i, 0), len(branches) - 1)](*operands)


def fori_loop(lower, upper, body_fun, init_val):
    """body_fun(i, val) for i in range(lower, upper), val threaded through"""
    lo, hi = (int(np.asarray(_decided("fori_loop", b, "a bound"))) for b in (lower, upper))
    _unrolled("fori_loop", hi - lo, init_val)
    val = init_val
    for i in range(lo, hi):
        val = body_fun(i, val)
    return val


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """body(*loop_vars) while cond(*loop_vars), a tuple of vars or one; cond must give a Python / array value"""
    is_tuple = isinstance(loop_vars, (tuple, list))
    vars_ = tuple(loop_vars) if is_tuple else (loop_vars,)
    steps = 0
    while maximum_iterations is None or steps < int(maximum_iterations):
        if not bool(np.asarray(_decided("while_loop", cond(*vars_), "cond's result"))):
            break
        steps += 1
        _unrolled("while_loop", steps, vars_)
        out = body(*vars_)
        vars_ = tuple(out) if is_tuple else (out,)
    return type(loop_vars)(vars_) if is_tuple else vars_[0]


def _leading(op, xs):
    """the leading length of xs (an array or a tuple / list of them), refusing symbolic tensors"""
    if lx.sym(xs):
        lx.refuse(op, "over a symbolic tensor's leading axis, the batch's (a model already maps over its samples; "
                  "write the per-sample function on the batch)")
    leaves = list(xs) if isinstance(xs, (tuple, list)) else [xs]
    return leaves, {np.shape(v)[0] for v in leaves}


def _stack(op, ys):
    if not ys:
        return None
    if isinstance(ys[0], (tuple, list)):
        return type(ys[0])(_stack(op, [y[i] for y in ys]) for i in range(len(ys[0])))
    if ys[0] is None:
        return None
    if lx.sym(*ys):
        lx.refuse(op, "outputs that are symbolic tensors: stacked, their steps' axis would come before the batch axis")
    return np.stack([np.asarray(y) for y in ys])


def _items(xs, n):
    if isinstance(xs, (tuple, list)):
        return [type(xs)(np.asarray(v)[i] for v in xs) for i in range(n)]
    return [np.asarray(xs)[i] for i in range(n)]


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """(carry, stacked ys) of carry, y = f(carry, x) over xs's leading axis (or `length` steps of x None)"""
    if xs is None:
        if length is None:
            raise ValueError("keras.ops.scan: give xs or length")
        items = [None] * int(length)
    else:
        leaves, lengths = _leading("scan", xs)
        if len(lengths) != 1 or length is not None and int(length) not in lengths:
            raise ValueError(f"keras.ops.scan: xs's leading lengths {sorted(lengths)} and length={length} differ")
        items = _items(xs, lengths.pop())
    _unrolled("scan", len(items), init)
    carry, ys = init, []
    for x in (items[::-1] if reverse else items):
        carry, y = f(carry, x)
        ys.append(y)
    return carry, _stack("scan", ys[::-1] if reverse else ys)


def map(f, xs):   # noqa: A001 - keras.ops' name
    """f on each item of xs's leading axis, the results stacked"""
    leaves, lengths = _leading("map", xs)
    if len(lengths) != 1:
        raise ValueError(f"keras.ops.map: xs's leading lengths {sorted(lengths)} differ")
    return _stack("map", [f(x) for x in _items(xs, lengths.pop())])


def vectorized_map(function, elements):
    """function on each item of elements' leading axis, the results stacked (computed one by one)"""
    leaves, lengths = _leading("vectorized_map", elements)
    if len(lengths) != 1:
        raise ValueError(f"keras.ops.vectorized_map: the leading lengths {sorted(lengths)} differ")
    return _stack("vectorized_map", [function(x) for x in _items(elements, lengths.pop())])


def associative_scan(f, elems, reverse=False, axis=0):
    """the running f(...f(f(e0, e1), e2)...) along axis (reverse: from the end, as JAX's flip, scan, flip); on a
    symbolic tensor along a sample axis, slices folded left to right and concatenated (f applied len - 1 times;
    f must be associative, as Keras requires: JAX combines in a tree)"""
    if not lx.sym(elems):
        if isinstance(elems, (tuple, list)):
            parts = [np.moveaxis(np.asarray(e), axis, 0) for e in elems]
            n = parts[0].shape[0]
            order = range(n - 1, -1, -1) if reverse else range(n)
            acc, outs = None, [None] * n
            for i in order:
                cur = type(elems)(p[i] for p in parts)
                acc = cur if acc is None else f(acc, cur)
                outs[i] = acc
            return type(elems)(np.moveaxis(np.stack([np.asarray(o[j]) for o in outs]), 0, axis)
                               for j in range(len(parts)))
        x = np.moveaxis(np.asarray(elems), axis, 0)
        order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        acc, outs = None, [None] * x.shape[0]
        for i in order:
            acc = x[i] if acc is None else np.asarray(f(acc, x[i]))
            outs[i] = acc
        return np.moveaxis(np.stack(outs), 0, axis)
    if isinstance(elems, (tuple, list)):
        lx.refuse("associative_scan", "of several symbolic tensors (one tensor)")
    a = lx.sample_axis("associative_scan", elems, axis)
    n = lx.static("associative_scan", elems, a)
    _unrolled("associative_scan", n, elems)
    order = range(n - 1, -1, -1) if reverse else range(n)
    acc, outs = None, [None] * n
    for i in order:
        cur = lx.cut(elems, a, i, i + 1)
        acc = cur if acc is None else f(acc, cur)
        outs[i] = acc
    return lx.concat(outs, a)


def vectorize(pyfunc, *, excluded=None, signature=None):
    """pyfunc mapped over its arguments' elements (or core dimensions, signature), on arrays (np.vectorize)"""
    vf = np.vectorize(pyfunc, excluded=excluded or set(), signature=signature)

    def call(*args, **kwargs):
        if lx.sym(*args, *kwargs.values()):
            lx.refuse("vectorize", "pyfunc called per element of a symbolic tensor: a graph cannot call Python per "
                      "element; write pyfunc with keras.ops on the whole tensor")
        return vf(*args, **kwargs)
    return call


def custom_gradient(f):
    """f returns (y, grad_fn): on arrays y (there is no gradient to change); on symbolic tensors refused: the
    engine differentiates its primitives, never a Python gradient function"""
    def call(*args, **kwargs):
        if lx.sym(*args, *kwargs.values()):
            lx.refuse("custom_gradient", "a Python gradient function cannot run in the engine's backward pass; "
                      "use keras.ops.stop_gradient compositions (x + stop_gradient(y - x) for a straight-through "
                      "estimator)")
        y, _ = f(*args, **kwargs)
        return y
    return call


def jvp(fun, primals, tangents, has_aux=False):
    """refused: forward-mode differentiation of a Python function"""
    raise OpNotSupportedError("keras.ops.jvp is not supported by boundfit: it differentiates a Python function in "
                              "forward mode, and boundfit differentiates only its engine's graphs (in fit); "
                              "compute directional derivatives with a model, or with JAX")


jvp._boundfit_refused = True
for _f in (map, vectorized_map, vectorize, custom_gradient):
    _f._boundfit_arrays_only = True
