"""keras.utils.model_to_dot / plot_model: the same boxes (labels: names, classes, shapes, dtypes, activations,
trainable) and the same connections as Keras 3's graph of the same model, for each option; plot_model's file, and
its errors without pydot or Graphviz."""

import re
import shutil
import sys

import pytest

import boundfit as bf
import keras_ref
from helpers import keras_recorded

pydot = pytest.importorskip("pydot", reason="pydot (a test dependency) draws the graphs")


def functional(k):
    inner = k.Sequential([k.Input((8,)), k.layers.Dense(4, activation="relu", name="a"),
                          k.layers.Dense(3, name="b")], name="inner")
    x = k.Input((8,), name="x")
    h = inner(x)
    y = k.layers.Add(name="add")([k.layers.Dense(2, name="c")(h), k.layers.Dense(2, activation="tanh", name="d")(h)])
    m = k.Model(x, y, name="net")
    m.get_layer("c").trainable = False
    return m


def sequential(k):
    return k.Sequential([k.Input((5,)), k.layers.Dense(3, activation="sigmoid", name="s1"),
                         k.layers.Dropout(0.1, name="s2"), k.layers.Dense(1, name="s3")], name="seq")


OPTIONS = {"plain": {}, "shapes": dict(show_shapes=True, show_dtype=True),
           "activations_trainable": dict(show_layer_activations=True, show_trainable=True),
           "no_names": dict(show_layer_names=False), "nested": dict(expand_nested=True, show_shapes=True)}


def described(dot):
    """(sorted box labels, sorted (source label, destination label) edges, clusters) of a pydot graph"""
    labels, edges, clusters = {}, [], []

    def walk(g):
        for n in g.get_nodes():
            if n.get_name() not in ("node", "edge", "graph"):
                labels[n.get_name()] = n.get("label")
        edges.extend((e.get_source(), e.get_destination()) for e in g.get_edges())
        for sub in g.get_subgraphs():
            clusters.append(sub.get_name())
            walk(sub)
    walk(dot)
    return sorted(labels.values()), sorted((labels[a], labels[b]) for a, b in edges), sorted(clusters)


@pytest.mark.parametrize("make", [functional, sequential])
@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_model_to_dot_draws_the_boxes_and_edges_keras_draws(make, option):
    ours = described(bf.utils.model_to_dot(make(bf), **OPTIONS[option]))
    theirs = keras_recorded.case(lambda: list(described(keras_ref.load().utils.model_to_dot(
        make(keras_ref.load()), **OPTIONS[option]))))
    assert [list(map(list, x)) if x and isinstance(x[0], tuple) else list(x) for x in ours] == \
        [[list(e) for e in x] if x and isinstance(x[0], (list, tuple)) else list(x) for x in theirs]
    assert ours[0] and (ours[1] or make is sequential and option == "nested")


def test_dot_graph_settings_as_keras():
    dot = bf.utils.model_to_dot(sequential(bf), rankdir="LR", dpi=96, splines="line")
    assert (dot.get("rankdir"), dot.get("dpi"), dot.get("splines")) == ("LR", 96, "line")
    assert bf.utils.model_to_dot(sequential(bf), subgraph=True).get_name() == "cluster_seq"


@pytest.mark.parametrize("kwargs, match", [(dict(layer_range=["a", "b"]), "layer_range"),
                                           (dict(colour=True), "unrecognized keyword arguments")])
def test_model_to_dot_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bf.utils.model_to_dot(sequential(bf), **kwargs)


def test_an_unbuilt_model_is_refused():
    with pytest.raises(ValueError, match="not yet been built"):
        bf.utils.model_to_dot(bf.Sequential([bf.layers.Dense(2)]))


def test_plot_model_writes_the_drawing_or_says_to_install_graphviz(tmp_path, monkeypatch, capsys):
    path = tmp_path / "model.svg"
    if shutil.which("dot") is None:   # Graphviz's program absent (this machine): Keras's ImportError, or in
        monkeypatch.delitem(sys.modules, "IPython.core.magics.namespace", raising=False)   # IPython a message
        with pytest.raises(ImportError, match="You must install graphviz"):
            bf.utils.plot_model(functional(bf), to_file=path)
        monkeypatch.setitem(sys.modules, "IPython.core.magics.namespace", sys)
        assert bf.utils.plot_model(functional(bf), to_file=path) is None
        assert "You must install graphviz" in capsys.readouterr().out and not path.exists()
        return
    bf.utils.plot_model(functional(bf), to_file=path, show_shapes=True)
    assert re.search(rb"<svg", path.read_bytes()) and b"(None, 8)" in path.read_bytes()


def test_plot_model_without_pydot_says_to_install_it(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython.core.magics.namespace", raising=False)
    monkeypatch.setattr(bf.model_plot, "_pydot", lambda: None)
    with pytest.raises(ImportError, match=r"pip install pydot"):
        bf.utils.plot_model(sequential(bf))
    with pytest.raises(ImportError, match=r"pip install pydot"):
        bf.utils.model_to_dot(sequential(bf))
