"""keras.tree: flatten / paths / map / pack / traverse / compare on nested lists, tuples, namedtuples, dicts,
OrderedDicts, defaultdicts, deques and None equal Keras 3's (optree) on the same structures, and the mismatches
Keras refuses raise ValueError here too."""

import collections

import pytest

import boundfit as bf
import keras_ref

Point = collections.namedtuple("Point", ["x", "y"])
STRUCTURES = {
    "leaf": 3, "none": None, "empty_list": [], "empty_dict": {},
    "list": [1, [2, 3], (4, 5)],
    "dict_unsorted": {"b": 1, "a": [2, {"d": 3, "c": 4}]},
    "ordered": collections.OrderedDict([("z", 1), ("a", 2)]),
    "defaultdict": collections.defaultdict(list, {"y": 1, "x": (2, None)}),
    "namedtuple": Point(1, [2, {"k": 3}]),
    "deque": collections.deque([1, (2, 3)], maxlen=5),
    "shapes": {"in": (None, 3), "out": [(2,), (None, None, 1)]},
    "subclass_is_leaf": [collections.Counter(a=1), 5],
}


def keras_tree():
    return keras_ref.load().tree


def ops(tree, s):
    """every keras.tree function on one structure, as comparable values"""
    seen_td, seen_bu = [], []
    return dict(
        nested=tree.is_nested(s),
        flat=repr(tree.flatten(s)),
        paths=repr(tree.flatten_with_path(s)),
        mapped=repr(tree.map_structure(lambda x: ("leaf", x), s)),
        mapped_none=repr(tree.map_structure(lambda x: 0, s, none_is_leaf=False)),
        packed=repr(tree.pack_sequence_as(s, list(range(len(tree.flatten(s)))))),
        tuples=repr(tree.lists_to_tuples(s)),
        shapes=repr(tree.map_shape_structure(lambda x: ("shape", x), s)),
        td=repr(tree.traverse(lambda x: seen_td.append(repr(x)), s)) + repr(seen_td),
        bu=repr(tree.traverse(lambda x: seen_bu.append(repr(x)), s, top_down=False)) + repr(seen_bu),
        cut=repr(tree.traverse(lambda x: tree.MAP_TO_NONE if isinstance(x, tuple) else None, s)),
    )


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_tree_functions_equal_keras(name):
    assert ops(bf.tree, STRUCTURES[name]) == ops(keras_tree(), STRUCTURES[name])


def test_map_structure_of_several_and_up_to_equal_keras():
    k = keras_tree()
    a, b = {"p": [1, 2], "q": 3}, {"q": 30, "p": [10, 20]}
    for tree in (bf.tree, k):
        assert tree.map_structure(lambda x, y: x + y, a, b) == {"p": [11, 22], "q": 33}
    shallow, deep = [0, [0, 0]], [[1, 1], [2, 2]]
    assert bf.tree.map_structure_up_to(shallow, str, deep) == k.map_structure_up_to(shallow, str, deep) == \
        ["[1, 1]", ["2", "2"]]
    assert bf.tree.map_structure_up_to([0, 0], len, deep) == [2, 2]
    for tree in (bf.tree, k):   # Keras 3.15 (optree) takes a None in the shallow structure for a node
        with pytest.raises(ValueError):
            tree.map_structure_up_to([None, [None, None]], str, deep)


PAIRS = {"same": ([(0, 1)], [(2, 3)]), "dict_kinds": ({"a": 1}, collections.OrderedDict(a=2)),
         "list_tuple": ([1, 2], (1, 2)), "lengths": ([1, 2], [1, 2, 3]), "keys": ({"a": 1}, {"b": 1}),
         "deeper": ([1, 2], [1, [2]]), "namedtuple_classes": (Point(0, 1), collections.namedtuple("Point", "x y")(0, 1))}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_assert_same_structure_and_paths_agree_with_keras(name):
    def outcome(tree, f):
        try:
            f(*PAIRS[name])
            return "ok"
        except ValueError:
            return "ValueError"
    k = keras_tree()
    for f in ("assert_same_structure", "assert_same_paths"):
        assert outcome(bf.tree, getattr(bf.tree, f)) == outcome(k, getattr(k, f)), f
    mapped = [outcome(t, lambda a, b: t.map_structure(lambda x, y: x, a, b)) for t in (bf.tree, k)]
    assert mapped[0] == mapped[1]


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="has 2 leaves, flat_sequence has 3"):
        bf.tree.pack_sequence_as([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="at least one structure"):
        bf.tree.map_structure(len)
    with pytest.raises(TypeError, match="func` must be callable"):
        bf.tree.traverse(3, [1])
    with pytest.warns(DeprecationWarning, match="check_types"):
        bf.tree.assert_same_structure([1], [2], check_types=True)
