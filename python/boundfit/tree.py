"""keras.tree: nested structures (lists, tuples, namedtuples, dicts, OrderedDicts, defaultdicts, deques) flattened,
mapped, packed and compared as Keras 3 does it with optree: None is a leaf, a dict's leaves come in sorted key order
(an OrderedDict's in its own), other types (subclasses of list or dict included) are leaves."""

import collections
import warnings


class MAP_TO_NONE:
    """traverse(): a function returning this replaces the sub-tree with None"""


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:   # keys that do not sort: their own order (as optree)
        return list(d)


def _node(x):
    """(kind, keys, children, rebuild) of a nested structure, or None for a leaf. kind compares structures: dicts of
    any of the three mapping types are one kind, a namedtuple is its class."""
    t = type(x)
    if t is list or t is tuple:
        return t, list(range(len(x))), list(x), t
    if _is_namedtuple(x):
        return t, list(range(len(x))), list(x), lambda cs: t(*cs)
    if t is collections.deque:
        return t, list(range(len(x))), list(x), lambda cs: collections.deque(cs, maxlen=x.maxlen)
    if t in (dict, collections.OrderedDict, collections.defaultdict):
        keys = list(x) if t is collections.OrderedDict else _sorted_keys(x)
        order = list(x)

        def rebuild(cs):
            by_key = dict(zip(keys, cs))
            items = [(k, by_key[k]) for k in order]
            if t is collections.defaultdict:
                return collections.defaultdict(x.default_factory, items)
            return t(items)
        return dict, keys, [x[k] for k in keys], rebuild
    return None


def is_nested(structure):
    """Whether structure is a list, tuple, namedtuple, dict, OrderedDict, defaultdict or deque (empty ones too)."""
    return _node(structure) is not None


def flatten(structure):
    """The leaves, depth first (dicts by sorted key)."""
    return [leaf for _, leaf in flatten_with_path(structure)]


def flatten_with_path(structure):
    """(path, leaf) pairs; a path is the tuple of indices and keys from the root."""
    out = []

    def walk(x, path):
        n = _node(x)
        if n is None:
            out.append((path, x))
            return
        for k, c in zip(n[1], n[2]):
            walk(c, path + (k,))
    walk(structure, ())
    return out


def _mismatch(what=""):
    return ValueError("Structures don't have the same nested structure." + (f" {what}" if what else ""))


def _map(func, structures, leaf_of):
    """func over the leaves of structures[0] (leaf_of(x): x is a leaf), the others matching it"""
    first = structures[0]
    if leaf_of(first):   # the others may go deeper here: func checks where it must not
        return func(*structures)
    kind, keys, children, rebuild = _node(first)
    rows = [children]
    for s in structures[1:]:
        n = _node(s)
        if n is None or n[0] is not kind or n[1] != keys:
            raise _mismatch(f"{type(first).__name__} with keys/length {keys} against {s!r}")
        rows.append(n[2])
    return rebuild([_map(func, list(cs), leaf_of) for cs in zip(*rows)])


def map_structure(func, *structures, none_is_leaf=True):
    """func applied to the leaves of the structures (of the same nesting), in a structure like the first. With
    none_is_leaf=False a None stays None."""
    if not callable(func):
        raise TypeError(f"map_structure: `func` must be callable, got {func!r}")
    if not structures:
        raise ValueError("Must provide at least one structure")
    def checked(*xs):
        if len(xs) > 1 and any(_node(x) is not None for x in xs[1:]):
            raise _mismatch(f"{xs[0]!r} is a leaf where another structure has {[x for x in xs[1:]]!r}")
        return None if xs[0] is None and not none_is_leaf else func(*xs)
    return _map(checked, list(structures), lambda x: _node(x) is None)


def map_structure_up_to(shallow_structure, func, *structures):
    """func applied down to shallow_structure's leaves; what lies deeper in structures is passed whole."""
    if not structures:
        raise ValueError("Must provide at least one structure")

    def up_to(shallow, *xs):
        if shallow is None:   # Keras 3 (optree) takes a None of the shallow structure for a node
            raise _mismatch("(a None in shallow_structure)")
        return func(*xs)
    return _map(up_to, [shallow_structure] + list(structures), lambda x: _node(x) is None)


def assert_same_structure(a, b, check_types=None):
    """ValueError unless a and b nest the same way (dict types interchangeable given the same keys; lists, tuples,
    namedtuples and deques not)."""
    if check_types is not None:
        warnings.warn("The `check_types` argument is deprecated and no longer has any effect, please remove.",
                      DeprecationWarning, stacklevel=2)

    def both_leaves(x, y):
        if _node(y) is not None:
            raise _mismatch(f"{x!r} against {y!r}")
    _map(both_leaves, [a, b], lambda x: _node(x) is None)


def assert_same_paths(a, b):
    """ValueError unless a and b have the same paths (collection types aside), naming the paths that differ."""
    pa = {p for p, _ in flatten_with_path(a)}
    pb = {p for p, _ in flatten_with_path(b)}
    if pa != pb:
        msg = "`a` and `b` don't have the same paths."
        if pa - pb:
            msg += f"\nPaths in `a` missing in `b`:\n{pa - pb}"
        if pb - pa:
            msg += f"\nPaths in `b` missing in `a`:\n{pb - pa}"
        raise ValueError(msg)


def pack_sequence_as(structure, flat_sequence):
    """flat_sequence's items put into structure's nesting (in flatten()'s order)."""
    flat = list(flat_sequence)
    n = len(flatten(structure))
    if len(flat) != n:
        raise ValueError(f"pack_sequence_as: the structure has {n} leaves, flat_sequence has {len(flat)} items")
    it = iter(flat)
    return map_structure(lambda _: next(it), structure)


def traverse(func, structure, top_down=True):
    """func on each sub-tree, depth first (parents first when top_down): a value other than None replaces the
    sub-tree (MAP_TO_NONE for None) and, top-down, is not entered."""
    if not callable(func):
        raise TypeError(f"traverse: `func` must be callable, got {func!r}")

    def children_done(x):
        n = _node(x)
        return x if n is None else n[3]([traverse(func, c, top_down) for c in n[2]])

    if top_down:
        ret = func(structure)
        if ret is None:
            return children_done(structure)
    else:
        done = children_done(structure)
        ret = func(done)
        if ret is None:
            return done
    return None if ret is MAP_TO_NONE else ret


def lists_to_tuples(structure):
    """Every list in structure made a tuple."""
    return traverse(lambda x: tuple(x) if isinstance(x, list) else None, structure, top_down=False)


def map_shape_structure(func, structure):
    """map_structure where a list or tuple of ints and Nones (a shape) is a leaf."""
    def shape(x):
        return isinstance(x, (list, tuple)) and all(isinstance(e, (int, type(None))) for e in x)
    return _map(func, [structure], lambda x: shape(x) or _node(x) is None)
