"""A boundfit model against the same model in Keras 3 (JAX backend, CPU):
same weights and batch give the same outputs, loss (summed mean squared
errors over the outputs) and gradients, the last read off boundfit's
weights after one SGD step with learning rate 1."""

import numpy as np

import boundfit as bf
from boundfit import layers
from keras_ref import load

from . import keras_recorded


def close(ref, got, rtol=1e-5, scale=None):
    """Max-norm relative error of a tensor, against its own largest value or a
    given scale: a gradient whose entries are small sums of larger float32
    terms differs by ~1e-8 when the sums run in another order (BLAS, XLA), so
    gradients are compared relative to the largest gradient of the model."""
    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    assert ref.shape == got.shape, (ref.shape, got.shape)
    top = max(np.abs(ref).max(), scale or 0.0, 1e-6)
    assert np.abs(ref - got).max() <= rtol * top, (np.abs(ref - got).max(), top)


def against_keras(build, x, y, rtol=1e-5, order=None, prepare=None, training=False, fit=None, finite=False):
    """build(K, Ls) makes the model in Keras (K=keras) and in boundfit
    (K=boundfit); x is an array or a list (one per input), y an array or a
    list (one per output). Keras's outputs, loss and gradients come from one
    jitted JAX call (stateless_call), boundfit's from predict and one fit
    step. Returns the boundfit model.

    order(model, weights=None): the boundfit model's weights in Keras's order,
    set first when weights are given (default: get_weights / set_weights).
    prepare(keras_model): called before Keras's call (dropout masks).
    training: Keras's call in training mode; the predictions are then compared
    with Keras's predict. fit(model, x, y): boundfit's step, returning its
    History (default: one batch, shuffle=False). finite: Keras's outputs must
    be finite."""
    mb = build(bf, layers)
    y = y(mb) if callable(y) else y
    ys = y if isinstance(y, list) else [y]
    k = keras_recorded.case(lambda: _keras_step(build, x, ys, prepare, training))
    w0, lk, out, grads = k["w0"], k["loss"], k["out"], k["grads"]
    if order is None:
        mb.set_weights(w0)
    else:
        assert [w.shape for w in order(mb, w0)] == [w.shape for w in w0]
    assert k["trainable"] == len(w0)
    if finite:
        assert all(np.all(np.isfinite(np.asarray(o))) for o in out)
    rows = len(x[0] if isinstance(x, list) else x)
    got = mb.predict(x, batch_size=rows, verbose=0)
    ref = k["predict"] if training else out
    for o, g in zip(ref, got if isinstance(got, list) else [got]):
        close(o, g, rtol)
    mb.compile(optimizer=bf.optimizers.SGD(learning_rate=1.0), loss="mse")
    yb = ys if len(ys) > 1 else ys[0]
    history = fit(mb, x, yb) if fit is not None else mb.fit(x, yb, batch_size=rows, epochs=1, shuffle=False,
                                                            verbose=0)
    lb = history.history["loss"][0]
    assert abs(float(lk) - lb) <= rtol * abs(float(lk)), (float(lk), lb)
    top = max(float(np.abs(np.asarray(g)).max()) for g in grads)
    for w, g, b in zip(w0, grads, order(mb) if order is not None else mb.get_weights()):
        close(np.asarray(g), w - b, rtol, scale=top)
    return mb


def _keras_step(build, x, ys, prepare, training):
    """Keras's side of against_keras: the weights set (w0), the loss, outputs and gradients of one jitted call,
    its predictions (training), the count of trainable variables"""
    keras = load()
    import jax
    import jax.numpy as jnp
    mk = build(keras, keras.layers)
    w0 = [(np.random.default_rng(1).standard_normal(w.shape) * 0.5).astype(np.float32) for w in mk.get_weights()]
    mk.set_weights(w0)
    if prepare is not None:
        prepare(mk)
    xs = [jnp.asarray(a, jnp.float32) for a in (x if isinstance(x, list) else [x])]
    ntv = [v.value for v in mk.non_trainable_variables]   # dropout seed states only
    kw = {"training": True} if training else {}

    def loss(tv, xs, ys):
        out, _ = mk.stateless_call(tv, ntv, xs if len(xs) > 1 else xs[0], **kw)
        out = out if isinstance(out, (list, tuple)) else [out]
        return sum(jnp.mean((o - t) ** 2) for o, t in zip(out, ys)), out

    (lk, out), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))([v.value for v in mk.trainable_variables],
                                                                       xs, ys)
    return {"w0": w0, "loss": float(lk), "out": [np.asarray(o) for o in out],
            "grads": [np.asarray(g) for g in grads], "trainable": len(mk.trainable_variables),
            "predict": [np.asarray(mk.predict(x, verbose=0))] if training else None}
