"""keras.backend.result_type: Keras 3's type promotion (JAX's lattice): each dtype's upper bounds on a DAG of bool,
the unsigned and signed integers, the floats and complex types, with Python's int and float as "weak" types that
take the other operand's kind; 64-bit results narrowed to 32 bits as on the JAX backend."""

import functools

# each type's immediate successors on the lattice ("int" / "float": Python's weak types)
_LATTICE = {
    "bool": ["int"], "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"], "uint32": ["int64", "uint64"],
    "uint64": ["float"], "int": ["uint8", "int8", "complex64"], "int8": ["int16"], "int16": ["int32"],
    "int32": ["int64"], "int64": ["float"], "float": ["bfloat16", "float16"], "bfloat16": ["float32"],
    "float16": ["float32"], "float32": ["float64", "complex64"], "float64": ["complex128"],
    "complex64": ["complex128"], "complex128": [],
}
_NARROW = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}
_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")


def _upper_bounds():
    ub = {}
    for n in _LATTICE:
        seen, todo = {n}, [n]
        while todo:
            for m in _LATTICE[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        ub[n] = seen
    return ub


_UB = _upper_bounds()


@functools.lru_cache(512)
def _join(*nodes):
    """the least upper bound of the nodes"""
    bad = [n for n in nodes if n not in _UB]
    if bad:
        raise ValueError(f"dtype={bad[0]!r} is not a valid dtype for Keras type promotion.")
    common = set.intersection(*(_UB[n] for n in nodes))
    least = (common & set(nodes)) or {c for c in common if common <= _UB[c]}
    if len(least) != 1:
        raise ValueError(f"Input dtypes {nodes} have no available implicit dtype promotion path. Try explicitly "
                         "casting inputs to the desired output type.")
    return least.pop()


def _weak(dtype):
    """Python's int / float as a weak type of their kind"""
    if dtype == "bool":
        return dtype
    for kind in ("float", "int", "complex"):
        if kind in dtype:
            return kind
    raise ValueError(f"Invalid dtype: {dtype}")


def _resolve(weak, precision):
    """a weak result at floatx()'s precision"""
    first = "f" if weak == "bfloat16" else weak[:1]
    return {"b": "bool", "i": f"int{precision}", "u": f"uint{precision}"}.get(first, f"float{precision}")


def result_type(dtypes, floatx, standardize_dtype):
    """the dtype Keras 3 gives an operation on these dtypes (None is floatx; Python int and float are weak);
    ValueError for float8 or dtypes with no promotion path"""
    if not dtypes:
        return floatx
    if any(d in _FLOAT8 for d in dtypes):
        raise ValueError(f"There is no implicit conversions from float8 dtypes to others. You must cast it "
                         f"internally. Received: {dtypes}")
    args = [floatx if d is None else d for d in dtypes]
    names = [standardize_dtype(a) for a in args]
    weak = [a is int or a is float for a in args]
    if len(names) == 1:
        out, out_weak = names[0], weak[0]
    elif len(set(names)) == 1 and not all(weak):
        out, out_weak = names[0], False
    elif all(weak):
        out, out_weak = _join(*sorted(set(names))), True
    else:
        out = _join(*sorted({_weak(n) if w else n for n, w in zip(names, weak)}))
        out_weak = out in ("int", "float")
    if out != "bool" and out_weak:
        out = _resolve(out, floatx[-2:])
    return _NARROW.get(out, out)
