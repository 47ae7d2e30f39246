"""A model on strings (a TextVectorization as its host-side first stage,
engine/host_stage.py) on a GPU against the CPU: the vectorized batches the
engine takes from the host give the same predictions, training and
evaluation (skipped without a GPU; tests/test_cuda_sim.py runs it on the
device emulation)."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers as L
from test_cuda_backend import _REASON

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_a_string_model_trains_predicts_and_evaluates_on_cuda_as_on_the_cpu():
    rng = np.random.default_rng(0)
    words = "good bad great awful fine movie plot actor boring fun".split()
    texts = np.array([" ".join(rng.choice(words, 8)) for _ in range(40)])
    labels = np.array([float("good" in t) for t in texts], np.float32)
    vl = L.TextVectorization(max_tokens=12, output_sequence_length=8)
    vl.adapt(texts)
    i = bf.Input(shape=(1,), dtype="string")
    m = bf.Model(i, L.Dense(1, activation="sigmoid")(L.GlobalAveragePooling1D()(L.Embedding(12, 4)(vl(i)))))
    m.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    w0 = m.get_weights()
    np.testing.assert_allclose(m.predict(texts, verbose=0, device="cuda"), m.predict(texts, verbose=0, device="cpu"),
                               rtol=1e-5, atol=1e-6)
    runs = []
    for device in ("cpu", "cuda"):
        m.set_weights(w0)
        bf.utils.set_random_seed(3)
        h = m.fit(texts, labels, batch_size=16, epochs=2, validation_split=0.25, verbose=0, device=device).history
        runs.append((h, m.get_weights(), m.evaluate(texts, labels, verbose=0, device=device)))
    (hc, wc, ec), (hg, wg, eg) = runs
    for k in hc:
        np.testing.assert_allclose(hg[k], hc[k], rtol=1e-5)
    for a, b in zip(wg, wc):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(eg, ec, rtol=1e-5)
