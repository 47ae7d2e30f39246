"""Keras 3's losses written in keras.ops (boundfit/losses/composed.py:
KLDivergence, Poisson, the hinge family, CosineSimilarity, MSLE, MAPE, the
focal cross-entropies, Dice, Tversky, CategoricalGeneralizedCrossEntropy)
against Keras 3 (JAX, CPU): each value, called on arrays and traced into the
engine (evaluate of an identity model), with and without sample weights, on
random inputs and edge cases (zeros, one-hot targets, values at and below the
1e-7 clipping epsilon); two epochs of training of a small multi-output model
(one composed loss per head, same initial weights and batches) with sample
weights; every Keras name resolving by string as in Keras; Keras's configs
and serialized forms; .keras files both ways; bad arguments and the refused
Circle raising by name (CTC: tests/test_ops_conv_ctc.py)."""

import json
import zlib

import numpy as np
import pytest

import boundfit as bf
from helpers.keras_recorded import case, keras_file
from keras_ref import load
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


rng = np.random.default_rng(7)
B, D = 12, 4
SW = rng.uniform(0.2, 2.0, B).astype(np.float32)


@pytest.fixture(autouse=True)
def _own_data(request):
    """each test draws its data from its own seed: Keras's results are recorded per test, whichever ran before"""
    global rng
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _prob(shape):
    """uniform in (0, 1), with zeros, values at / below the 1e-7 epsilon and just under 1 in the first rows"""
    p = rng.uniform(0.0, 1.0, shape).astype(np.float32)
    p[0] = 0.0
    p[1].flat[0], p[1].flat[1], p[2].flat[0] = 1e-7, 1e-9, np.float32(1 - 1e-8)
    return p


def _onehot(shape):
    return np.eye(shape[-1], dtype=np.float32)[rng.integers(0, shape[-1], shape[:-1])]


def _binary(shape):
    return (rng.uniform(size=shape) > 0.5).astype(np.float32)


DATA = {
    "prob": _prob,
    "prob_rows": lambda s: (lambda a: (a.__setitem__(0, 0.5), a)[1])(_prob(s)),   # no row of zeros (0 / 0)
    "onehot": _onehot,
    "binary": _binary,
    "pm1": lambda s: 2.0 * _binary(s) - 1.0,
    "signed": lambda s: rng.standard_normal(s).astype(np.float32),
    "softmax": lambda s: (lambda e: e / e.sum(-1, keepdims=True))(rng.uniform(0.0, 3.0, s).astype(np.float32)),
    "zero_rows": lambda s: (lambda a: (a.__setitem__(slice(0, 3), 0.0), a)[1])(
        rng.standard_normal(s).astype(np.float32)),
}

# (loss class, its arguments, targets, predictions, per-sample shape)
CASES = [
    ("KLDivergence", {}, "prob", "prob", (D,)),
    ("KLDivergence", {}, "onehot", "softmax", (3, D)),
    ("Poisson", {}, "prob", "prob", (D,)),
    ("Hinge", {}, "binary", "signed", (D,)),
    ("Hinge", {}, "pm1", "signed", (D,)),
    ("SquaredHinge", {}, "binary", "signed", (D,)),
    ("CategoricalHinge", {}, "onehot", "signed", (D,)),
    ("MeanSquaredLogarithmicError", {}, "prob", "signed", (D,)),
    ("MeanAbsolutePercentageError", {}, "prob", "signed", (D,)),
    ("CosineSimilarity", {}, "zero_rows", "zero_rows", (D,)),
    ("CosineSimilarity", {}, "signed", "signed", (3, D)),
    ("BinaryFocalCrossentropy", {}, "binary", "prob", (D,)),
    ("BinaryFocalCrossentropy", dict(apply_class_balancing=True, alpha=0.4, gamma=1.5, from_logits=True,
                                     label_smoothing=0.1), "binary", "signed", (D,)),
    ("BinaryFocalCrossentropy", dict(gamma=3.0), "prob", "prob", (2, 3, 2)),
    ("CategoricalFocalCrossentropy", {}, "onehot", "prob_rows", (D,)),
    ("CategoricalFocalCrossentropy", dict(alpha=0.5, gamma=3.0, from_logits=True, label_smoothing=0.2), "onehot",
     "signed", (D,)),
    ("Dice", {}, "binary", "prob", (D,)),
    ("Dice", dict(axis=-1), "binary", "prob", (D,)),
    ("Dice", dict(axis=(1, 2, 3)), "binary", "prob", (3, 3, 2)),
    ("Tversky", dict(alpha=0.3, beta=0.7), "binary", "prob", (D,)),
    ("Tversky", dict(axis=(1, 2)), "prob", "prob", (3, D)),
]


def _identity(shape):
    x = bf.Input(shape=shape)
    return bf.Model(x, bf.layers.Activation("linear")(x))


def _engine_value(loss, t, p, sw=None):
    """The loss traced into the engine: evaluate of a model whose output is its input"""
    m = _identity(p.shape[1:])
    m.compile(optimizer="sgd", loss=loss)
    return m.evaluate(p, t, sample_weight=sw, batch_size=len(p), verbose=0)


@pytest.mark.parametrize("name, kwargs, tk, pk, shape", CASES,
                         ids=[f"{c[0]}-{c[2]}-{c[3]}-{len(c[4])}d{'-args' if c[1] else ''}" for c in CASES])
def test_each_loss_equals_keras_on_arrays_and_in_the_engine_with_sample_weights(name, kwargs, tk, pk, shape):
    t, p = DATA[tk]((B,) + shape), DATA[pk]((B,) + shape)

    def compute():
        ref = getattr(load().losses, name)(**kwargs)
        sw = SW.reshape((B,) + (1,) * (np.ndim(ref.call(t, p)) - 1))   # Keras's weights of per-step values: (B, 1)
        return sw.shape, float(ref(t, p)), float(ref(t, p, sample_weight=sw))
    sw_shape, want, want_w = case(compute)
    loss, sw = getattr(bf.losses, name)(**kwargs), SW.reshape(sw_shape)
    tol = dict(rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(loss(t, p), want, **tol)
    np.testing.assert_allclose(loss(t, p, sample_weight=sw), want_w, **tol)
    np.testing.assert_allclose(_engine_value(loss, t, p), want, **tol)
    np.testing.assert_allclose(_engine_value(loss, t, p, SW), want_w, **tol)


def test_generalized_cross_entropy_takes_class_ids_as_keras():
    ids, p = rng.integers(0, D, B), DATA["softmax"]((B, D))
    p[0, ids[0]] = 0.0                                     # a zero probability of the target class
    loss = bf.losses.CategoricalGeneralizedCrossEntropy(q=0.7)
    want = case(lambda: float(load().losses.CategoricalGeneralizedCrossEntropy(q=0.7)(ids, p, sample_weight=SW)))
    np.testing.assert_allclose(loss(ids, p, sample_weight=SW), want, rtol=2e-5)
    np.testing.assert_allclose(_engine_value(loss, ids, p, SW), want, rtol=2e-5)
    np.testing.assert_allclose(_engine_value(loss, ids[:, None], p, SW), want, rtol=2e-5)   # (B, 1) ids too


# ---- training ----

HEADS = [   # (loss, output activation, units, targets)
    (lambda M: M.losses.KLDivergence(), "softmax", D, "softmax"),
    (lambda M: M.losses.CategoricalFocalCrossentropy(gamma=3.0, label_smoothing=0.1), "softmax", D, "onehot"),
    (lambda M: M.losses.BinaryFocalCrossentropy(apply_class_balancing=True, gamma=1.5, from_logits=True), None, 3,
     "binary"),
    (lambda M: M.losses.Hinge(), "tanh", 3, "binary"),
    (lambda M: M.losses.CosineSimilarity(), None, D, "signed"),
    (lambda M: M.losses.Dice(), "sigmoid", 3, "binary"),
    (lambda M: M.losses.CategoricalGeneralizedCrossEntropy(q=0.6), "softmax", D, "ids"),
]   # 7 heads: a model has at most 8 outputs (boundfit._core.MAX_OUTPUTS)


def _heads_model(M):
    x = M.Input(shape=(5,))
    h = M.layers.Dense(8, activation="tanh")(x)
    outs = [M.layers.Dense(u, activation=a, name=f"out{k}")(h) for k, (_, a, u, _) in enumerate(HEADS)]
    return M.Model(x, outs)


def test_a_model_with_a_composed_loss_per_head_trains_two_epochs_as_keras_with_sample_weights():
    n = 24
    x = rng.standard_normal((n, 5)).astype(np.float32)
    ys = [rng.integers(0, u, n) if tk == "ids" else np.abs(DATA[tk]((n, u))) if tk == "prob" else DATA[tk]((n, u))
          for _, _, u, tk in HEADS]
    sw = rng.uniform(0.2, 2.0, n).astype(np.float32)
    keys = ["loss"] + [f"out{k}_loss" for k in range(len(HEADS))]

    def compute():
        keras = load()
        km = _heads_model(keras)
        w = km.get_weights()
        km.compile(optimizer=keras.optimizers.SGD(0.1), loss=[h[0](keras) for h in HEADS])
        hk = km.fit(x, ys, sample_weight=sw, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return dict(w=w, history={key: hk.history[key] for key in keys}, w1=km.get_weights())
    k = case(compute)
    bm = _heads_model(bf)
    bm.set_weights(k["w"])
    bm.compile(optimizer=bf.optimizers.SGD(0.1), loss=[h[0](bf) for h in HEADS])
    hb = bm.fit(x, ys, sample_weight=sw, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for key in keys:
        np.testing.assert_allclose(hb.history[key], k["history"][key], rtol=1e-4, atol=1e-6, err_msg=key)
    for a, b in zip(bm.get_weights(), k["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# ---- names, configs, files ----

def _resolved(obj, base=bf.losses.Loss):
    """The Keras loss function a loss object computes, by name (base: the library's Loss class)."""
    if isinstance(obj, bf.losses.CustomLoss):
        g = obj.given
        return g.fn.__name__ if isinstance(g, bf.losses.ComposedLoss) else g.__name__
    if not isinstance(obj, base):
        return obj.__name__
    return getattr(obj, "fn", None).__name__ if hasattr(obj, "fn") else {"huber_loss": "huber"}.get(obj.name,
                                                                                                   obj.name)


def test_every_keras_loss_name_but_circle_resolves_as_in_keras():
    refused = {"Circle", "circle"}
    t, p = DATA["prob"]((B, D)), DATA["prob"]((B, D))
    oh, sm = _onehot((B, D)), DATA["softmax"]((B, D))

    def compute():
        keras = load()
        from keras.src.losses import ALL_OBJECTS_DICT
        names = sorted(k for k in ALL_OBJECTS_DICT if k not in ("Loss", "LossFunctionWrapper") and k not in refused)
        return dict(resolved={name: _resolved(keras.losses.get(name), keras.losses.Loss) for name in names},
                    kld=float(np.mean(keras.losses.get("kld")(t, p))),
                    focal=float(np.mean(keras.losses.categorical_focal_crossentropy(oh, sm))),
                    public=[n for n in dir(keras.losses) if not n.startswith("_")])
    k = case(compute)
    for name, theirs in k["resolved"].items():
        assert _resolved(bf.losses.get(name)) == theirs, name
    m = _identity((D,))
    m.compile(optimizer="sgd", loss="kld")
    np.testing.assert_allclose(m.evaluate(p, t, batch_size=B, verbose=0), k["kld"], rtol=2e-5)
    m.compile(optimizer="sgd", loss=bf.losses.categorical_focal_crossentropy)   # a function, traced
    np.testing.assert_allclose(m.evaluate(sm, oh, batch_size=B, verbose=0), k["focal"], rtol=2e-5)
    public = k["public"]
    works = [n for n in public if n not in refused and hasattr(bf.losses, n)]
    assert sorted(set(public) - set(works)) == sorted(refused)   # 46 of Keras's 48 names (16 before)


@pytest.mark.parametrize("name", ["Circle", "circle"])
def test_circle_is_refused_by_name_with_what_to_use_instead(name):
    with pytest.raises(AttributeError, match=f"boundfit.losses.{name} is not supported: .*(per-step|per-sample)"):
        getattr(bf.losses, name)
    with pytest.raises(ValueError, match=f"loss '{name}' is not supported"):
        _identity((D,)).compile(optimizer="sgd", loss=name)


def test_configs_and_serialized_forms_are_keras_and_load_in_keras(tmp_path):
    kws = {cls.__name__: {"axis": [1, 2]} if cls.__name__ in ("Dice", "Tversky") else {}
           for cls in bf.losses.composed.CLASSES}
    ours = {name: bf.losses.serialize(getattr(bf.losses, name)(**kw)) for name, kw in kws.items()}
    (tmp_path / "ours.json").write_text(json.dumps(ours, sort_keys=True))   # Keras's side recorded by them

    def compute():
        keras = load()
        from keras.src.losses import ALL_OBJECTS_DICT
        out = {}
        for name, kw in kws.items():
            theirs = getattr(keras.losses, name)(**kw)
            out[name] = dict(config=theirs.get_config(), serialized=keras.losses.serialize(theirs), back=None)
            if name in ALL_OBJECTS_DICT:   # not CategoricalGeneralizedCrossEntropy, which Keras 3.15 leaves out
                back = keras.losses.deserialize(ours[name])
                out[name]["back"] = [type(back).__name__, back.get_config()]
        return dict(out, kl_divergence=keras.losses.serialize(keras.losses.kl_divergence),
                    poisson=keras.losses.serialize(keras.losses.poisson))
    k = case(compute, files=[tmp_path / "ours.json"])
    for cls in bf.losses.composed.CLASSES:
        name, theirs = cls.__name__, k[cls.__name__]
        mine = cls(**kws[name])
        assert mine.get_config() == theirs["config"], name
        assert ours[name] == theirs["serialized"], name
        if theirs["back"] is not None:
            assert theirs["back"] == [name, theirs["config"]]
        again = bf.losses.deserialize(theirs["serialized"])
        assert type(again) is cls and again.get_config() == mine.get_config()
    assert bf.losses.serialize(bf.losses.kl_divergence) == k["kl_divergence"]
    assert bf.losses.deserialize(k["poisson"]) is bf.losses.poisson


def _file_model(M):
    x = M.Input(shape=(5,))
    return M.Model(x, M.layers.Dense(3, activation="softmax")(M.layers.Dense(6, activation="tanh")(x)))


def test_a_model_compiled_with_composed_losses_saves_and_loads_both_ways(tmp_path):
    x, t = rng.standard_normal((16, 5)).astype(np.float32), _onehot((16, 3))
    m = _file_model(bf)
    m.compile(optimizer="adam", loss=bf.losses.CategoricalFocalCrossentropy(gamma=3.0, label_smoothing=0.1))
    m.fit(x, t, batch_size=8, epochs=1, verbose=0)
    m.save(tmp_path / "b.keras")

    def opened():
        keras = load()
        k = keras.saving.load_model(tmp_path / "b.keras")
        return dict(same=k.loss.get_config() == keras.losses.CategoricalFocalCrossentropy(
            gamma=3.0, label_smoothing=0.1).get_config(), value=k.evaluate(x, t, batch_size=16, verbose=0))
    k = case(opened, files=[tmp_path / "b.keras"])
    assert k["same"]
    np.testing.assert_allclose(k["value"], m.evaluate(x, t, batch_size=16, verbose=0), rtol=1e-5)

    def save(p, i):
        keras = load()
        k = _file_model(keras)
        k.compile(optimizer="adam", loss=(keras.losses.Tversky(alpha=0.2, beta=0.8), keras.losses.kl_divergence,
                                          "msle")[i])
        k.save(p)
        return dict(value=k.evaluate(x, t, batch_size=16, verbose=0))
    for i in range(3):
        want = keras_file(tmp_path / "k.keras", lambda p: save(p, i), label=f"loss{i}")["value"]
        b = bf.models.load_model(tmp_path / "k.keras")
        np.testing.assert_allclose(b.evaluate(x, t, batch_size=16, verbose=0), want, rtol=1e-5)
        h = b.fit(x, t, batch_size=8, epochs=1, verbose=0)
        assert np.isfinite(h.history["loss"][0])


# ---- bad arguments ----

@pytest.mark.parametrize("make, match", [
    (lambda: bf.losses.CategoricalGeneralizedCrossEntropy(q=1.0), "q must be in \\(0.0, 1.0\\), got 1.0"),
    (lambda: bf.losses.BinaryFocalCrossentropy(gamma=-1), "gamma must be in \\[0.0, inf\\], got -1"),
    (lambda: bf.losses.CategoricalFocalCrossentropy(label_smoothing=1.5), "label_smoothing must be in"),
    (lambda: bf.losses.BinaryFocalCrossentropy(alpha="a"), "alpha must be a number, got 'a'"),
    (lambda: bf.losses.Tversky(beta=None), "beta must be a number"),
    (lambda: bf.losses.Dice(axis="rows"), "axis must be an integer, a tuple of integers or None, got 'rows'"),
    (lambda: bf.losses.CosineSimilarity(axis=None), "axis must be an integer, got None"),
    (lambda: bf.losses.KLDivergence(reduction="sum"), "reduction: only 'sum_over_batch_size'"),
])
def test_bad_arguments_raise_naming_them(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_loss_over_any_axis_reduces_and_a_bad_axis_raises_naming_it():
    """CosineSimilarity over axis 1 of (2, 3, D) (once refused: the REDUCE kind reduces any axis): a prediction
    equal to its target scores -1"""
    m = _identity((2, 3, D))
    m.compile(optimizer="sgd", loss=bf.losses.CosineSimilarity(axis=1))
    t = DATA["signed"]((B, 2, 3, D))
    np.testing.assert_allclose(m.evaluate(t, t, batch_size=B, verbose=0), -1.0, rtol=1e-5)
    m.compile(optimizer="sgd", loss=bf.losses.Dice(axis=(1, 5)))
    with pytest.raises(ValueError, match="axis 5 is out of range"):
        m.evaluate(t, t, batch_size=B, verbose=0)
