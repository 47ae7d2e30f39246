"""Keras 3's audio layers STFTSpectrogram and MelSpectrogram
(layers/audio.py) and the initializers Identity and STFT (initializers.py),
against Keras 3 itself (recorded, helpers/keras_recorded.py).

STFTSpectrogram: its cases as branches of one Functional model (input -> the
layer -> Flatten -> Dense): the initial kernels are Keras's STFT
initializer's, the same weights give the same predictions, two epochs of SGD
the same losses and weights (the kernels' gradients through every mode);
"angle" alone, compared modulo 2 pi (an imaginary part of +-0 puts it at +-pi
on either side); central differences; .keras files both ways. MelSpectrogram:
the same spectrograms as Keras on the same signals and files both ways.
Identity / STFT give Keras's values and names; bad arguments and inputs
raise naming the fault; OrthogonalRegularizer is refused by name."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import initializers as I
from boundfit.layers.layer import _counters
from conftest import directional_check
from helpers.keras_compare import against_keras, close
from helpers.keras_recorded import case, recorded
from keras_ref import load


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test: boundfit's files, whose contents key Keras's recorded results, do not
    depend on the tests run before"""
    _counters.clear()


# (id, per-sample input shape, STFTSpectrogram's arguments)
CASES = [
    ("magnitude_same", (40, 2), dict(mode="magnitude", frame_length=8, frame_step=3, padding="same", fft_length=16,
                                     window="hamming", periodic=True, scaling="spectrum")),
    ("psd_expand", (40, 2), dict(mode="psd", frame_length=7, padding="same", expand_dims=True, window=None,
                                 scaling=None)),
    ("real_channels_first", (2, 40), dict(mode="real", frame_length=8, frame_step=4, data_format="channels_first",
                                          expand_dims=True)),
    ("imag", (40, 1), dict(mode="imag", frame_length=6, frame_step=5, window="blackman")),
    ("stft", (40, 2), dict(mode="stft", frame_length=8, frame_step=2, fft_length=12, window="bartlett")),
]
MEL = [
    ("mel", dict(fft_length=64, sequence_stride=32, num_mel_bins=10, sampling_rate=8000)),
    ("mel_db_options", dict(fft_length=64, sequence_stride=20, sequence_length=48, window="hamming", num_mel_bins=12,
                            min_freq=100.0, max_freq=5000.0, top_db=20.0, mag_exp=1.0, ref_power=2.0)),
    ("mel_power", dict(fft_length=32, sequence_stride=16, power_to_db=False, window=None, num_mel_bins=8)),
]


def stft_model(M, cases=CASES):
    """each case a branch: its input -> STFTSpectrogram -> Flatten -> Dense(3), concatenated"""
    ins = {shape: M.Input(shape) for shape in dict.fromkeys(c[1] for c in cases)}
    outs = [M.layers.Dense(3, name=f"out_{name}")(M.layers.Flatten()(M.layers.STFTSpectrogram(name=name, **kw)(
        ins[shape]))) for name, shape, kw in cases]
    return M.Model(list(ins.values()), M.layers.Concatenate()(outs))


def mel_model(M):
    x = M.Input((300,))
    return M.Model(x, [M.layers.MelSpectrogram(name=name, **kw)(x) for name, kw in MEL])


def signals(shapes, n=8, seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal((n,) + s).astype(np.float32) for s in shapes]


SHAPES = list(dict.fromkeys(c[1] for c in CASES))


def _saved(m, path):
    m.save(path)
    return np.frombuffer(open(path, "rb").read(), np.uint8)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Keras's side (recorded): initial kernels, predictions with the weights w0, two epochs of SGD with momentum,
    its .keras file; boundfit's the same"""
    _counters.clear()
    d = tmp_path_factory.mktemp("files")
    xs = signals(SHAPES)
    y = np.random.default_rng(9).standard_normal((8, 3 * len(CASES))).astype(np.float32)

    def compute():
        keras = load()
        km = stft_model(keras)
        out = dict(init=km.get_weights())
        w0 = [(np.random.default_rng(1).standard_normal(w.shape) * 0.3).astype(np.float32) for w in out["init"]]
        km.set_weights(w0)
        out.update(w0=w0, out=km.predict(xs, verbose=0))
        km.compile(optimizer=keras.optimizers.SGD(0.005, momentum=0.9), loss="mse")
        out["loss"] = km.fit(xs, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
        out.update(weights=km.get_weights(), trained=km.predict(xs, verbose=0), file=_saved(km, d / "k.keras"),
                   configs={name: km.get_layer(name).get_config() for name, _, _ in CASES})
        return out
    k = recorded("audio_layers_stft", __file__, compute)
    bm = stft_model(bf)
    init = bm.get_weights()
    bm.set_weights(k["w0"])
    out = dict(init=init, out=bm.predict(xs, verbose=0))
    bm.compile(optimizer=bf.optimizers.SGD(0.005, momentum=0.9), loss="mse")
    out["loss"] = bm.fit(xs, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    bm.save(d / "ours.keras")
    (d / "theirs.keras").write_bytes(k["file"].tobytes())
    return dict(keras=k, bm=bm, xs=xs, ours_file=d / "ours.keras", theirs=bf.models.load_model(d / "theirs.keras"),
                **out)


def test_stft_spectrogram_kernels_start_as_keras_stft_initializer(runs):
    ours, theirs = runs["init"], runs["keras"]["init"]
    assert [w.shape for w in ours] == [w.shape for w in theirs]
    for a, b in zip(theirs, ours):
        if a.ndim == 3:   # the kernels (the Dense heads are random)
            np.testing.assert_allclose(b, a, atol=1e-6)


def test_stft_spectrogram_predicts_and_trains_as_keras(runs):
    """every mode's branch: predictions, then losses and weights after two epochs (the kernels' gradients)"""
    k, bm = runs["keras"], runs["bm"]
    close(k["out"], runs["out"], 2e-5)
    np.testing.assert_allclose(runs["loss"], k["loss"], rtol=1e-5)
    for a, b in zip(k["weights"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=2e-5)


def test_stft_spectrogram_keras_files_both_ways(runs):
    """Keras opens boundfit's file (Keras's class, config and trained weights, its predictions); boundfit opens
    Keras's and predicts as Keras"""
    xs = runs["xs"]

    def opened():
        km = load().models.load_model(runs["ours_file"])
        return dict(configs={name: km.get_layer(name).get_config() for name, _, _ in CASES},
                    classes=[type(km.get_layer(name)).__name__ for name, _, _ in CASES],
                    weights=km.get_weights(), out=km.predict(xs, verbose=0))
    got = case(opened, files=[runs["ours_file"]])
    assert got["classes"] == ["STFTSpectrogram"] * len(CASES)
    assert got["configs"] == runs["keras"]["configs"]
    for a, b in zip(got["weights"], runs["bm"].get_weights()):
        np.testing.assert_array_equal(a, b)
    close(got["out"], runs["bm"].predict(xs, verbose=0), 2e-5)
    close(runs["keras"]["trained"], runs["theirs"].predict(xs, verbose=0), 2e-5)


def test_stft_spectrogram_angle_is_keras_modulo_2pi():
    kw = dict(mode="angle", frame_length=8, frame_step=3, padding="same")
    x, = signals([(40, 2)], n=3)

    def compute():
        keras = load()
        layer = keras.layers.STFTSpectrogram(**kw)
        return layer(x), layer.get_weights()
    want, w = case(compute)
    layer = bf.layers.STFTSpectrogram(**kw)
    inp = bf.Input((40, 2))
    m = bf.Model(inp, layer(inp))
    m.set_weights(w)
    d = np.mod(m.predict(x, verbose=0) - np.asarray(want) + np.pi, 2 * np.pi) - np.pi
    assert np.abs(d).max() < 1e-4


def test_stft_spectrogram_log_step_is_keras():
    """mode "log" (its gradient grows as 1 / magnitude, so a few steps amplify float rounding: one step here):
    Keras's outputs, loss and kernels' gradients on the same weights and batch"""
    x, = signals([(40, 2)], n=4, seed=6)
    y = np.random.default_rng(7).standard_normal((4, 3)).astype(np.float32)
    against_keras(lambda K, Ls: K.Sequential([K.Input((40, 2)), Ls.STFTSpectrogram(frame_length=8, frame_step=3),
                                              Ls.Flatten(), Ls.Dense(3)]), x, y, rtol=2e-5)


@pytest.mark.parametrize("mode", ["log", "psd", "stft"])
def test_stft_spectrogram_matches_central_differences(mode):
    x, = signals([(24, 2)], n=4, seed=3)
    y = np.random.default_rng(4).standard_normal((4, 2)).astype(np.float32)
    m = bf.Sequential([bf.Input((24, 2)), bf.layers.STFTSpectrogram(mode=mode, frame_length=6, frame_step=4),
                       bf.layers.Flatten(), bf.layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    directional_check(m, x, y)


@pytest.fixture(scope="module")
def mel(tmp_path_factory):
    _counters.clear()
    d = tmp_path_factory.mktemp("mel")
    x = signals([(300,)], n=3, seed=5)[0]

    def compute():
        km = mel_model(load())
        return dict(out=km.predict(x, verbose=0), file=_saved(km, d / "k.keras"),
                    configs={name: km.get_layer(name).get_config() for name, _ in MEL})
    k = recorded("audio_layers_mel", __file__, compute)
    bm = mel_model(bf)
    bm.save(d / "ours.keras")
    (d / "theirs.keras").write_bytes(k["file"].tobytes())
    return dict(keras=k, bm=bm, x=x, ours_file=d / "ours.keras", theirs=bf.models.load_model(d / "theirs.keras"))


def test_mel_spectrogram_is_keras_on_the_same_signals(mel):
    """three configurations (decibels with the batch's top_db clip, a shorter hamming window, mag_exp 1,
    ref_power; power without a window); the maximum of a batch decides the clip, as Keras's"""
    for want, got in zip(mel["keras"]["out"], mel["bm"].predict(mel["x"], verbose=0)):
        close(want, got, 1e-5)
    assert {name: mel["bm"].get_layer(name).get_config() for name, _ in MEL} == mel["keras"]["configs"]


def test_mel_spectrogram_keras_files_both_ways(mel):
    x = mel["x"]

    def opened():
        km = load().models.load_model(mel["ours_file"])
        return dict(classes=[type(km.get_layer(name)).__name__ for name, _ in MEL], out=km.predict(x, verbose=0))
    got = case(opened, files=[mel["ours_file"]])
    assert got["classes"] == ["MelSpectrogram"] * len(MEL)
    for want, ours, theirs in zip(got["out"], mel["bm"].predict(x, verbose=0), mel["theirs"].predict(x, verbose=0)):
        close(want, ours, 1e-5)
        close(want, theirs, 1e-5)


def test_mel_spectrogram_mixes_the_batch_so_micro_batches_refuse_it():
    """top_db clips at the maximum over the whole batch (Keras's ops.max of the batch's spectrograms)"""
    x = bf.Input((300,))
    m = bf.Model(x, bf.layers.Flatten()(bf.layers.MelSpectrogram(fft_length=64, sequence_stride=32,
                                                                 num_mel_bins=4, name="mel")(x)))
    m.compile(optimizer="sgd", loss="mse")
    xs = signals([(300,)], n=4)[0]
    with pytest.raises(ValueError, match="mixes the samples of a batch.*use micro_batch=None"):
        m.fit(xs, np.zeros((4, 40), np.float32), batch_size=4, micro_batch=2, verbose=0)


def test_identity_and_stft_initializers_give_keras_values_and_names():
    def compute():
        keras = load()
        return dict(identity=[np.asarray(keras.initializers.Identity(gain=g)(s)) for g, s in
                              ((1.0, (3, 5)), (2.5, (4, 2)))],
                    stft=[np.asarray(keras.initializers.STFT(*a)((9, 1, 5))) for a in
                          (("real", "hann", "density", False), ("imag", "hamming", "spectrum", True),
                           ("real", None, None, False))],
                    names={n: type(keras.initializers.get(n)).__name__ for n in
                           ("identity", "IdentityInitializer", "stft", "STFTInitializer", "OrthogonalInitializer")},
                    stft_config=keras.initializers.serialize(keras.initializers.STFT("imag", "hamming", "spectrum", True)),
                    ours_identity=np.asarray(keras.initializers.deserialize(ours)((2, 3))))
    ours = I.serialize(I.Identity(2.0))   # with its gain (Keras's own config of Identity forgets it)
    k = case(compute)
    for want, (g, s) in zip(k["identity"], ((1.0, (3, 5)), (2.5, (4, 2)))):
        np.testing.assert_array_equal(I.Identity(gain=g)(s), want)
    for want, a in zip(k["stft"], (("real", "hann", "density", False), ("imag", "hamming", "spectrum", True),
                                   ("real", None, None, False))):
        np.testing.assert_allclose(I.STFT(*a)((9, 1, 5)), want, atol=1e-6)
    assert {n: type(I.get(n)).__name__ for n in k["names"]} == k["names"]
    assert I.serialize(I.STFT("imag", "hamming", "spectrum", True)) == k["stft_config"]
    assert I.deserialize(k["stft_config"]) == I.STFT("imag", "hamming", "spectrum", True)
    np.testing.assert_array_equal(k["ours_identity"], 2.0 * np.eye(2, 3))
    d = bf.Sequential([bf.Input((3,)), bf.layers.Dense(5, kernel_initializer="identity")])
    np.testing.assert_array_equal(d.get_weights()[0], k["identity"][0])


@pytest.mark.parametrize("make, match", [
    (lambda: bf.layers.STFTSpectrogram(mode="db"), "mode"),
    (lambda: bf.layers.STFTSpectrogram(frame_length=16, frame_step=17), "frame_step"),
    (lambda: bf.layers.STFTSpectrogram(frame_length=16, fft_length=8), "fft_length"),
    (lambda: bf.layers.STFTSpectrogram(scaling="power"), "scaling"),
    (lambda: bf.layers.STFTSpectrogram(padding="causal"), "padding"),
    (lambda: bf.layers.STFTSpectrogram(window="kaiser"), "window 'kaiser'.*as an array"),
    (lambda: bf.layers.STFTSpectrogram(data_format="channels_middle"), "data_format"),
    (lambda: bf.layers.MelSpectrogram(fft_length=16, sequence_length=32), "fft_length"),
    (lambda: bf.layers.MelSpectrogram(window="blackman"), "window"),
    (lambda: bf.layers.MelSpectrogram(num_mel_bins=0), "num_mel_bins"),
    (lambda: bf.layers.MelSpectrogram(min_freq=5000.0, max_freq=100.0), "max_freq"),
    (lambda: bf.layers.MelSpectrogram(top_db=None), "top_db"),
    (lambda: I.STFT(side="both"), "side"),
    (lambda: I.Identity(gain="2"), "gain"),
    (lambda: bf.Sequential([bf.Input((4, 3)), bf.layers.Conv1D(2, 2, kernel_initializer="identity")]),
     "kernel_initializer: Identity matrix initializer can only be used for 2D"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make, shape, match", [
    (lambda: bf.layers.STFTSpectrogram(frame_length=8), (40,), "3 axes"),
    (lambda: bf.layers.STFTSpectrogram(frame_length=64), (40, 1), "shorter than frame_length 64"),
    (lambda: bf.layers.MelSpectrogram(fft_length=64), (40, 2), r"\(batch, samples\)"),
    (lambda: bf.layers.MelSpectrogram(fft_length=64), (20,), "too short for fft_length 64"),
])
def test_inputs_a_layer_cannot_take_raise_at_the_call(make, shape, match):
    with pytest.raises(ValueError, match=match):
        make()(bf.Input(shape))


@pytest.mark.parametrize("make", [
    lambda: bf.regularizers.OrthogonalRegularizer(0.01), lambda: bf.regularizers.orthogonal_regularizer(),
    lambda: bf.layers.Dense(3, kernel_regularizer="orthogonal_regularizer"),
    lambda: bf.layers.Dense(3, kernel_regularizer={"module": "keras.regularizers", "class_name":
                                                   "OrthogonalRegularizer", "config": {"factor": 0.01, "mode": "rows"},
                                                   "registered_name": None}),
])
def test_orthogonal_regularizer_is_refused_by_name_saying_what_to_use(make):
    with pytest.raises(NotImplementedError, match="OrthogonalRegularizer is not supported.*Use regularizers.L2"):
        make()
