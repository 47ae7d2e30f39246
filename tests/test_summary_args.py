"""model.summary()'s Keras arguments (line_length, positions, print_fn, expand_nested, show_trainable,
layer_range): the same rows, nested rows and Trainable flags as Keras 3's summary of the same model (Keras's is a
rich table, boundfit's plain text: the rows' contents are compared), column widths from positions, and each bad
argument's error."""

import os
import re

import pytest

import boundfit as bf
import keras_ref
from helpers import keras_recorded


def build(k):
    inner = k.Sequential([k.Input((8,)), k.layers.Dense(4, name="a"), k.layers.Dense(3, name="b")], name="inner")
    x = k.Input((8,), name="x")
    h = inner(x)
    y = k.layers.Add(name="add")([k.layers.Dense(2, name="c")(h), k.layers.Dense(2, name="d")(h)])
    m = k.Model(x, y, name="net")
    inner.trainable = False
    return m


CASES = {"plain": {}, "nested": dict(expand_nested=True), "trainable": dict(show_trainable=True),
         "nested_trainable": dict(expand_nested=True, show_trainable=True),
         "range": dict(layer_range=["inner", "c"]), "range_regex": dict(layer_range=["d", "a.."])}


def rows(text):
    """(layer name, class, trainable flag or '') per row, nested rows marked with their depth"""
    out = []
    for line in text.splitlines():
        m = re.search(r"((?:   )*)(?:└ )?(\w+) \((\w+)\)", line)
        if m:
            flag = re.search(r"\s([YN-])\s*│?\s*$", line)
            out.append((len(m.group(1)) // 3 + ("└" in line), m.group(2), m.group(3), flag.group(1) if flag else ""))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_rows_equal_keras(case):
    def keras_text():
        k = keras_ref.load()
        lines = []
        os.environ["COLUMNS"] = "240"   # rich's console width: the whole table
        try:
            build(k).summary(print_fn=lines.append, line_length=200, **CASES[case])
        finally:
            del os.environ["COLUMNS"]
        return "\n".join(lines)

    lines = []
    build(bf).summary(print_fn=lines.append, line_length=200, **CASES[case])
    ours, theirs = rows("\n".join(lines)), rows(keras_recorded.case(keras_text))
    if not CASES[case].get("show_trainable"):
        ours, theirs = [r[:3] for r in ours], [r[:3] for r in theirs]
    assert ours == theirs and ours
    totals = lambda text: re.findall(r"(Total|Trainable|Non-trainable) params: ([\d,]+) \(([\d.]+ \w+)\)", text)
    assert totals("\n".join(lines)) == totals(keras_recorded.case(keras_text, "again"))


def test_trainable_weights_equal_keras_after_freezing():
    def shapes(k):
        x = k.Input((6,))
        h = k.layers.BatchNormalization(name="bn")(k.layers.Dense(4, name="d1")(x))
        m = k.Model(x, k.layers.Dense(2, name="d2")(h))
        out = [[list(w.shape) for w in ws] for ws in (m.trainable_weights, m.non_trainable_weights)]
        m.get_layer("d1").trainable = False
        out += [[list(w.shape) for w in ws] for ws in (m.trainable_weights, m.non_trainable_weights,
                                                       m.get_layer("bn").trainable_weights)]
        return out
    ours = shapes(bf)
    assert ours == keras_recorded.case(lambda: shapes(keras_ref.load()))
    assert ours[2] == [[4], [4], [4, 2], [2]]   # bn's gamma, beta; d2

def test_positions_place_the_columns_and_long_cells_wrap():
    m = build(bf)
    lines = []
    m.summary(print_fn=lines.append, line_length=64, positions=[26, 40, 48, 64])
    lines = lines[0].splitlines()
    header = lines[1]
    assert header.index("Output") == 26 and header.index("Param") == 40 and header.index("Connected") == 48
    assert all(len(l) <= 64 for l in lines[1:lines.index(next(l for l in lines if l.startswith(" Total")))])
    assert any(l.startswith(" " * 48) for l in lines)   # "input ..." connections wrapped under their column


@pytest.mark.parametrize("kwargs, match", [
    (dict(layer_range=["c"]), "layer_range must be a list or tuple of two"),
    (dict(layer_range=[0, 1]), "layer_range should contain strings"),
    (dict(layer_range=["nope", "c"]), "no layer's name matches 'nope'"),
    (dict(layer_range=["d", "c"]), "comes after"),
    (dict(positions=[0.5, 1.0]), "positions needs 4 entries"),
    (dict(line_length=20), "narrower than 4"),
    (dict(line_length=0.5), "line_length must be a positive integer"),
])
def test_bad_summary_arguments_raise_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build(bf).summary(print_fn=lambda s: None, **kwargs)
