"""Subclassing as Keras 3 allows it (issue 33), against Keras itself (its
results recorded, tests/helpers/keras_recorded.py): the keras.io VAE pattern
(nested encoder / decoder models, a Sampling layer drawing keras.random.normal
with a SeedGenerator, the KL term given to add_loss() in the model's own
call()) compiled with a reconstruction loss, without loss= (the added loss
trains it, fit(x) without targets), or with compute_loss() overridden; a
weight the model itself owns (Model.add_weight); a model whose inputs are
intermediate tensors (Keras cuts the graph there: the same layers, the same
weights); layers.Reshape with -1 over a variable-length axis. Same weights
and batches: same losses, evaluation and predictions. What boundfit cannot
do raises naming it."""

import numpy as np
import pytest

import boundfit as bf
from helpers.keras_recorded import recorded

import keras_ref

rng = np.random.default_rng(33)
X = rng.uniform(size=(24, 8)).astype(np.float32)
Y = rng.standard_normal((24, 2)).astype(np.float32)
SEQ = rng.standard_normal((3, 5, 4)).astype(np.float32)
FORMS = ("reconstruction_loss", "no_loss", "compute_loss")


def vae(M, form, noise=0.0):
    """keras.io's VAE, small: noise scales the Sampling layer's draw (0 for the same numbers as Keras, whose
    draws are JAX's)"""
    layers, ops = M.layers, M.ops

    class Sampling(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = M.random.SeedGenerator(1337)

        def call(self, inputs):
            z_mean, z_log_var = inputs
            eps = M.random.normal(shape=ops.shape(z_mean), seed=self.seed_generator)
            return z_mean + ops.exp(0.5 * z_log_var) * eps * noise

    x = M.Input(shape=(8,))
    h = layers.Dense(6, activation="relu")(x)
    zm, zv = layers.Dense(2, name="z_mean")(h), layers.Dense(2, name="z_log_var")(h)
    encoder = M.Model(x, [zm, zv, Sampling()([zm, zv])], name="encoder")
    z = M.Input(shape=(2,))
    decoder = M.Model(z, layers.Dense(8, activation="sigmoid")(layers.Dense(6, activation="relu")(z)),
                      name="decoder")

    class VAE(M.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.encoder, self.decoder = encoder, decoder

        def call(self, data, training=None):   # (taking training: traced in both modes, the loss added once)
            z_mean, z_log_var, z = self.encoder(data)
            kl = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
            self.add_loss(ops.mean(ops.sum(kl, axis=1)))
            return self.decoder(z)

    class ComputesLoss(VAE):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            return 8 * ops.mean(M.losses.binary_crossentropy(x, y_pred))

    return ComputesLoss() if form == "compute_loss" else VAE()


def _weights(m):
    return [(np.random.default_rng(1).standard_normal(w.shape) * 0.3).astype(np.float32) for w in m.get_weights()]


def _vae_run(M, form, noise=0.0):
    m = vae(M, form, noise)
    m(X[:1])
    m.set_weights(_weights(m))
    if form == "reconstruction_loss":
        m.compile(optimizer=M.optimizers.Adam(0.01), loss="binary_crossentropy")
        h = m.fit(X, X, batch_size=8, epochs=2, shuffle=False, verbose=0)
        ev = m.evaluate(X, X, batch_size=12, verbose=0)
    else:   # no loss= : the added loss (or compute_loss) trains it, on x alone
        m.compile(optimizer=M.optimizers.Adam(0.01))
        h = m.fit(X, batch_size=8, epochs=2, shuffle=False, verbose=0)
        ev = m.evaluate(X, batch_size=12, verbose=0)
    return m, dict(loss=np.array(h.history["loss"]), evaluate=np.array(ev), predict=m.predict(X, verbose=0))


def _own_weight(M):
    """a weight the model itself owns (add_weight), used in call()"""
    class Scaled(M.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = M.layers.Dense(2)
            self.scale = self.add_weight(shape=(2,), initializer="ones", name="scale")

        def call(self, x):
            return self.dense(x) * self.scale
    return Scaled()


def _set_own_weight(m):
    m.dense.set_weights([np.full((8, 2), 0.1, np.float32), np.array([0.0, 0.5], np.float32)])
    m.scale.assign(np.array([2.0, -1.0], np.float32))


def _own_weight_run(M):
    m = _own_weight(M)
    m(X[:1])
    _set_own_weight(m)
    m.compile(optimizer=M.optimizers.SGD(0.1), loss="mse")
    h = m.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return dict(loss=np.array(h.history["loss"]), scale=np.asarray(m.scale.numpy()), predict=m.predict(X, verbose=0))


def _cut(M):
    """Model(inputs=an intermediate tensor): the layers after it, on a new Input"""
    x = M.Input(shape=(8,))
    h = M.layers.Dense(3, name="a")(x)
    o = M.layers.Dense(2, name="b")(M.layers.Activation("tanh")(h))
    return M.Model(x, o), M.Model(inputs=h, outputs=o)


def _reshape(M):
    x = M.Input(shape=(None, 4))
    return M.Model(x, M.layers.Dense(1)(M.layers.Reshape((-1, 2, 2))(x)))


def _keras():
    keras = keras_ref.load()
    out = {}
    for form in FORMS:
        out.update({f"vae_{form}_{k}": v for k, v in _vae_run(keras, form)[1].items()})
    out.update({f"own_{k}": v for k, v in _own_weight_run(keras).items()})
    full, cut = _cut(keras)
    full.set_weights(_weights(full))
    out["cut_predict"] = cut.predict(X[:, :3], verbose=0)
    m = _reshape(keras)
    m.set_weights(_weights(m))
    out["reshape_predict"] = m.predict(SEQ, verbose=0)
    return out


@pytest.fixture(scope="module")
def ref():
    return recorded("subclassing", __file__, _keras)


@pytest.mark.parametrize("form", FORMS)
def test_the_keras_io_vae_trains_as_keras_with_add_loss_in_the_models_call(ref, form):
    _, got = _vae_run(bf, form)
    for k, v in got.items():
        np.testing.assert_allclose(v, ref[f"vae_{form}_{k}"], rtol=2e-5, atol=1e-6, err_msg=k)


def test_the_vaes_sampling_draws_anew_each_step():
    """with the noise on, the draws (the engine's, not JAX's) change what the model learns, and each run draws
    anew"""
    _, quiet = _vae_run(bf, "reconstruction_loss")
    m, noisy = _vae_run(bf, "reconstruction_loss", noise=1.0)
    assert np.all(np.isfinite(noisy["loss"])) and not np.allclose(noisy["loss"], quiet["loss"])
    assert not np.allclose(m.predict(X, verbose=0), noisy["predict"])


def test_what_a_models_own_loss_cannot_do_raises_naming_it():
    m = vae(bf, "compute_loss")
    with pytest.raises(ValueError, match="overrides compute_loss\\(\\), which boundfit traces as the whole loss"):
        m.compile(optimizer="adam", loss="mse")
    m.compile(optimizer="adam")
    with pytest.raises(ValueError, match="ComputesLoss overrides compute_loss\\(\\), to which Keras passes the sample"):
        m.fit(X, X, sample_weight=np.ones(24, np.float32), verbose=0)

    class CallsSuper(bf.Model):
        def __init__(self):
            super().__init__()
            self.dense = bf.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            return super().compute_loss(x, y, y_pred, sample_weight, training)
    m = CallsSuper()
    m.compile(optimizer="adam")
    with pytest.raises(NotImplementedError, match="Model.compute_loss cannot be called"):
        m.fit(X, Y, verbose=0)
    x = bf.Input(shape=(8,))
    m = bf.Model(x, bf.layers.Dense(2)(x))
    m.compile(optimizer="adam")
    with pytest.raises(ValueError, match="No loss to compute"):
        m.fit(X, Y, verbose=0)

    class StepsItself(CallsSuper):   # keras.io's other VAE: Python run each step
        def train_step(self, data):
            return {}
    m = StepsItself()
    m.compile(optimizer="adam")
    with pytest.raises(NotImplementedError, match="StepsItself.train_step: .*never calls Python per step"):
        m.fit(X, Y, verbose=0)


def test_a_weight_the_model_owns_trains_as_keras(ref):
    got = _own_weight_run(bf)
    for k, v in got.items():
        np.testing.assert_allclose(v, ref[f"own_{k}"], rtol=1e-5, atol=1e-6, err_msg=k)


def test_a_model_on_intermediate_tensors_cuts_the_graph_and_shares_its_layers(ref):
    full, cut = _cut(bf)
    full.set_weights(_weights(full))
    assert [type(l).__name__ for l in cut.layers] == ["InputLayer", "Activation", "Dense"]
    assert cut.layers[-1] is full.get_layer("b") and cut.input.shape == (None, 3)
    np.testing.assert_allclose(cut.predict(X[:, :3], verbose=0), ref["cut_predict"], rtol=1e-5, atol=1e-6)
    cut.compile(optimizer="sgd", loss="mse")
    cut.fit(X[:, :3], Y, epochs=1, verbose=0)   # trains the layer it shares with the full model
    np.testing.assert_array_equal(full.get_layer("b").get_weights()[0], cut.get_weights()[0])


def test_reshape_with_minus_one_over_a_variable_length_axis_as_keras(ref):
    m = _reshape(bf)
    m.set_weights(_weights(m))
    np.testing.assert_allclose(m.predict(SEQ, verbose=0), ref["reshape_predict"], rtol=1e-5, atol=1e-6)
    with pytest.raises(bf.ops.OpNotSupportedError, match="its leading -1 takes in more than the batch axis"):
        bf.ops.reshape(bf.Input(shape=(None, 4)), (-1, 2, 2))


@pytest.mark.parametrize("which", ["own_weight", "cut"])
def test_keras_files_of_these_models_open_in_keras_and_back(tmp_path, which):
    """a model with a weight of its own, and one cut at an intermediate tensor: the .keras file opens in Keras
    and in boundfit with the same predictions (the keras.io VAE's Sampling layer draws with keras.random, which
    a .keras file cannot hold: refused by name)"""
    keras = keras_ref.load()
    m = _own_weight(bf) if which == "own_weight" else _cut(bf)[1]
    x = X if which == "own_weight" else X[:, :3]
    want = m.predict(x, verbose=0)
    path = str(tmp_path / "m.keras")
    m.save(path)
    np.testing.assert_array_equal(bf.models.load_model(path).predict(x, verbose=0), want)
    np.testing.assert_allclose(keras.models.load_model(path).predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    v = vae(bf, "no_loss")
    v(X[:1])
    with pytest.raises(ValueError, match="Sampling.*keras.random.normal, which a .keras file cannot hold"):
        v.save(str(tmp_path / "v.keras"))
