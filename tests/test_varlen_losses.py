"""Custom losses, losses layers add, compute_loss() and traced metrics on a
variable-length model (keras.Input((None,))): the loss is traced per length,
each length's training graph built into its own engine (weights and
optimizer state carried between lengths). Checked against Keras 3 (JAX,
recorded) on the same weights and the same bucketed batches: the losses and
metrics of each epoch, validation batches of other lengths, evaluate,
predict and the final weights; each length's plan against its arenas."""

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: files keyed by their names
from helpers.keras_recorded import case


def per_step(M):   # per-step class-id targets (batch, T): a squared error to their one-hot, per step
    def one_hot_mse(y_true, y_pred):
        return M.ops.mean(M.ops.square(y_pred - M.ops.one_hot(y_true, 5)), axis=-1)
    return one_hot_mse


def over_time(M):   # a Loss subclass that reduces over the time axis too: one value per sample
    class OverTime(M.losses.Loss):
        def call(self, y_true, y_pred):
            return M.ops.mean(M.ops.abs(y_true - y_pred), axis=(1, 2))
    return OverTime()


def build(M, kind):
    ids = M.Input(shape=(None,), dtype="int32")
    x = M.layers.Embedding(20, 6, mask_zero=kind == "masked")(ids)
    if kind == "added":
        class Penalty(M.layers.Layer):   # add_loss() in a custom layer's call()
            def call(self, h):
                self.add_loss(M.ops.mean(M.ops.square(h)))
                return h * 1.0
        x = Penalty()(x)
    x = M.layers.GRU(4, return_sequences=True)(x)
    out = M.layers.Dense(5)(x)
    if kind == "compute_loss":
        class Own(M.Model):
            def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
                return M.ops.mean(M.ops.square(y_pred - y))
        return Own(ids, out)
    return M.Model(ids, out)


def compile_args(M, kind):
    if kind in ("per_step", "masked"):
        return dict(loss=per_step(M))
    if kind == "over_time":
        return dict(loss=over_time(M), metrics=[M.metrics.MeanMetricWrapper(
            lambda t, p: M.ops.mean(M.ops.square(t - p), axis=-1), name="msq")])
    if kind == "added":
        def mean_abs(t, p):
            return M.ops.mean(M.ops.abs(t - p), axis=-1)
        return dict(loss="mse", metrics=[mean_abs])
    return {}


def batches(kind, lengths, seed):
    rng = np.random.default_rng(seed)
    out = []
    for T in lengths:
        x = rng.integers(1 if kind != "masked" else 0, 20, (4, T)).astype(np.int32)
        y = rng.integers(0, 5, (4, T)).astype(np.float32) if kind in ("per_step", "masked") else \
            rng.standard_normal((4, T, 5)).astype(np.float32)
        out.append((x, y))
    return out


def source(M, items):
    class Buckets(M.utils.PyDataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            return items[i]
    return Buckets()


KINDS = ["per_step", "masked", "over_time", "added", "compute_loss"]


@pytest.mark.parametrize("kind", KINDS)
def test_losses_on_bucketed_lengths_match_keras(kind):
    train, val = batches(kind, [3, 5, 3, 4], 1), batches(kind, [6, 2], 2)
    xp = batches(kind, [7], 3)[0][0]   # predict at a length fit never saw

    def keras_side():
        keras = keras_ref.load()
        km = build(keras, kind)
        w0 = km.get_weights()
        km.compile(keras.optimizers.Adam(0.02), **compile_args(keras, kind))
        h = km.fit(source(keras, train), epochs=2, shuffle=False, verbose=0, validation_data=source(keras, val))
        return {"w0": w0, "history": h.history, "weights": km.get_weights(),
                "evaluate": km.evaluate(source(keras, val), verbose=0, return_dict=True),
                "predict": km.predict(xp, verbose=0)}
    k = case(keras_side)
    bm = build(bf, kind)
    bm.set_weights(k["w0"])
    bm.compile(bf.optimizers.Adam(0.02), **compile_args(bf, kind))
    h = bm.fit(source(bf, train), epochs=2, shuffle=False, verbose=0, validation_data=source(bf, val))
    assert sorted(h.history) == sorted(k["history"])
    for key, want in k["history"].items():
        np.testing.assert_allclose(h.history[key], want, rtol=1e-5, atol=1e-6, err_msg=key)
    for a, b in zip(k["weights"], bm.get_weights(), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    ev = bm.evaluate(source(bf, val), verbose=0, return_dict=True)
    for key, want in k["evaluate"].items():
        np.testing.assert_allclose(ev[key], want, rtol=1e-5, atol=1e-6, err_msg=key)
    np.testing.assert_allclose(bm.predict(xp, verbose=0), k["predict"], rtol=1e-5, atol=1e-5)
    trainer = bm._loss_trainer[1]
    assert {s[0][0] for s in trainer._records} >= {2, 3, 4, 5, 6}   # one graph per length, traced once


def test_each_lengths_training_graph_is_planned_exactly():
    bm = build(bf, "per_step")
    bm.compile("adam", loss=per_step(bf))
    for x, y in batches("per_step", [3, 6, 3], 4):   # the second 3 on its cached engine
        bm.fit(x, y, batch_size=2, verbose=0)
        plan = bm.estimate_memory(batch_size=2)   # at the length it last ran (its targets known: class ids)
        bm.fit(x, y, batch_size=2, verbose=0)
        t = bm._loss_trainer[1]
        assert t._bound[0] == (x.shape[1],)
        stats = t._last_run_stats
        assert all(s["run_high_water"] == s["run_reserved"] for s in stats)
        arenas = (t._engine.weights_base() or t._engine).weight_arena_bytes + t._engine.optimizer_arena_bytes + \
            sum(s["run_high_water"] for s in stats)
        assert sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured", "cached")) == arenas
        assert sum(e.bytes for e in plan.breakdown if e.category == "cached") == t.cached_engine_bytes()


class PerStep:   # a Loss subclass with one value per step
    def __new__(cls, M):
        class PerStepAbs(M.losses.Loss):
            def call(self, y_true, y_pred):
                return M.ops.mean(M.ops.abs(y_true - y_pred), axis=-1)
        return PerStepAbs()


def masked_fixed(M, how):
    """a fixed-length masked sequence: Embedding(mask_zero=True), or a mask= argument on the recurrent call"""
    ids = M.Input(shape=(5,), dtype="int32")
    x = M.layers.Embedding(20, 6, mask_zero=how == "embedding")(ids)
    gru = M.layers.GRU(4, return_sequences=True)
    x = gru(x, mask=M.ops.not_equal(ids, 0)) if how == "mask_arg" else gru(x)
    return M.Model(ids, M.layers.Dense(3)(x))


@pytest.mark.parametrize("how", ["embedding", "mask_arg"])
def test_a_custom_loss_on_a_masked_sequence_is_masked_as_keras(how):
    """Keras's apply_mask: the batch loss is the mean of the values over the unmasked steps of the whole batch
    (a batch with none gives 0), sample weights on top (Keras 3.15 multiplies the (batch, T) mask with
    per-sample weights (batch,), which fails: Keras's side takes them per step, (batch, T), the same weights)"""
    rng = np.random.default_rng(6)
    x = rng.integers(1, 20, (6, 5)).astype(np.int32)
    x[:, 3:] = 0                    # padded
    x[2] = 0                        # a sample with no step left
    y = rng.standard_normal((6, 5, 3)).astype(np.float32)
    sw = rng.uniform(0.5, 2.0, 6).astype(np.float32)

    def keras_side():
        keras = keras_ref.load()
        km = masked_fixed(keras, how)
        w0 = km.get_weights()
        km.compile(keras.optimizers.Adam(0.02), loss=PerStep(keras))
        h = km.fit(x, y, sample_weight=np.repeat(sw[:, None], 5, axis=1), batch_size=3, epochs=2, shuffle=False,
                   verbose=0)
        return {"w0": w0, "loss": h.history["loss"], "w": km.get_weights(),
                "evaluate": km.evaluate(x, y, batch_size=3, verbose=0)}
    k = case(keras_side)
    bm = masked_fixed(bf, how)
    bm.set_weights(k["w0"])
    bm.compile(bf.optimizers.Adam(0.02), loss=PerStep(bf))
    h = bm.fit(x, y, sample_weight=sw, batch_size=3, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], k["loss"], rtol=1e-5)
    for a, b in zip(bm.get_weights(), k["w"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bm.evaluate(x, y, batch_size=3, verbose=0), k["evaluate"], rtol=1e-5)


def test_a_loss_over_the_steps_of_a_masked_sequence_is_refused_by_name():
    """Keras multiplies the (batch, T) mask into one value per sample, which does not broadcast"""
    bm = build(bf, "masked")
    bm.compile("adam", loss=over_time(bf))
    x, y = batches("over_time", [4], 5)[0]
    with pytest.raises(ValueError, match="over_time.*carries a step mask.*do not broadcast.*one value per step"):
        bm.fit(x, y, verbose=0)
