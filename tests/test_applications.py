"""keras.applications against Keras 3 (JAX): for one small member of each family boundfit builds, Keras builds
the model (weights=None, seed 0), sets every variable to a deterministic pattern of its own initial values (the
first 257 values repeated: the file then compresses to a few hundred KiB for the record), saves `.weights.h5`,
and predicts a fixed batch; boundfit builds the same application with weights=<that file>: the layers with
weights have Keras's names in Keras's order, the weights Keras's shapes in Keras's order, and the predictions
Keras's (to 1e-4 of their largest magnitude). A Keras 2 `.h5` file (the format of the pretrained downloads)
loads too; a fine-tuning program (frozen base, new head) takes Keras's two SGD steps with an exact plan;
ResNet50 at 224x224 gets a plan and batch_size="auto" without data. weights="imagenet" (a download) is refused by
name. Keras's results are recorded (helpers/keras_recorded.py); the other families: test_applications_more.py."""

import json
import lzma

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from conftest import assert_plan_equals_arenas
from fresh_names import fresh_layer_names  # noqa: F401 - autouse: Keras's automatic names from the start
from helpers.keras_recorded import case

PERIOD = 257
# one member per family, small where Keras allows (include_top=False, small inputs, alpha, few classes; a top's
# logits, not its near-uniform softmax)
FAMILIES = [
    ("ResNet50", dict(include_top=False, input_shape=(32, 32, 3))),
    ("ResNet50V2", dict(include_top=False, input_shape=(32, 32, 3), pooling="avg")),
    ("VGG16", dict(include_top=False, input_shape=(32, 32, 3), pooling="max")),
    ("MobileNet", dict(input_shape=(32, 32, 3), alpha=0.25, classes=4, classifier_activation=None)),
    ("MobileNetV2", dict(include_top=False, input_shape=(32, 32, 3), alpha=0.35, pooling="avg")),
    ("MobileNetV3Small", dict(input_shape=(32, 32, 3), alpha=0.75, classes=3, classifier_activation=None)),
    ("MobileNetV3Large", dict(include_top=False, input_shape=(32, 32, 3), alpha=0.75, minimalistic=True)),
    ("DenseNet121", dict(include_top=False, input_shape=(32, 32, 3))),
    ("DenseNet169", dict(include_top=False, input_shape=(32, 32, 3))),   # 594 layer calls: a deep member
    ("Xception", dict(include_top=False, input_shape=(71, 71, 3))),
    ("InceptionV3", dict(include_top=False, input_shape=(75, 75, 3), pooling="max")),
    ("EfficientNetB0", dict(input_shape=(32, 32, 3), classes=3, classifier_activation=None)),
]


def _patterned(model):
    """every variable of a Keras model as the first PERIOD of its initial values repeated; a constant one
    (biases, BatchNormalization's statistics) plus 0.1 times a fixed pattern (its magnitude for a variance)"""
    unit = np.random.default_rng(0).standard_normal(PERIOD).astype(np.float32)
    for v in model.weights:
        x = np.asarray(v).ravel().astype(np.float32)
        if x.std() == 0:
            x = x + 0.1 * np.resize(np.abs(unit) if "variance" in v.path else unit, x.size)
        else:
            x = np.resize(x[:PERIOD], x.size)
        v.assign(x.reshape(v.shape))


def _keras_app(fn, kwargs):
    """Keras's application, patterned, and (its .weights.h5 file's bytes, lzma-compressed)"""
    import os
    import tempfile
    keras = keras_ref.load()
    keras.backend.clear_session()   # Keras's automatic names from the start, as boundfit's (fresh_names)
    keras.utils.set_random_seed(0)
    m = getattr(keras.applications, fn)(weights=None, **kwargs)
    _patterned(m)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.weights.h5")
        m.save_weights(path)
        data = lzma.compress(open(path, "rb").read())
    return m, np.frombuffer(data, np.uint8)


def _batch(shape, n=2):
    return (np.random.default_rng(1).random((n,) + tuple(shape)) * 255.0).astype(np.float32)


def _write(tmp_path, packed, name="m.weights.h5"):
    path = tmp_path / name
    path.write_bytes(lzma.decompress(np.asarray(packed).tobytes()))
    return str(path)


def _is_subsequence(small, big):
    it = iter(big)
    return all(any(a == b for b in it) for a in small)


@pytest.mark.parametrize("fn,kwargs", FAMILIES, ids=[f for f, _ in FAMILIES])
def test_application_loads_keras_weights_file_and_predicts_as_keras(tmp_path, fn, kwargs):
    def compute():
        m, packed = _keras_app(fn, kwargs)
        x = _batch(m.input_shape[1:])
        return dict(file=packed, x=x, y=np.asarray(m.predict(x, verbose=0)), names=[l.name for l in m.layers],
                    weighted=[l.name for l in m.layers if l.weights],
                    shapes=[list(v.shape) for v in m.weights])
    ref = case(compute)
    m = getattr(bf.applications, fn)(weights=_write(tmp_path, ref["file"]), **kwargs)
    assert [l.name for l in m.layers if l.weights] == list(ref["weighted"])
    assert _is_subsequence(list(ref["names"]), [l.name for l in m.layers])   # (+ keras.ops pieces: x + 3.0)
    assert [list(w.shape) for w in m.weights] == [list(s) for s in ref["shapes"]]
    y = m.predict(ref["x"], verbose=0)
    assert y.shape == ref["y"].shape
    assert np.abs(y - ref["y"]).max() <= 1e-4 * np.abs(ref["y"]).max()


def test_keras2_h5_weights_file_loads_layer_by_layer_as_keras_loads_it(tmp_path):
    """keras.applications' pretrained downloads are Keras 2 .h5 files (layer_names / weight_names attributes):
    weights=<such a file> loads them in the model's layer order, as Keras 3's legacy loader does"""
    kwargs = dict(input_shape=(32, 32, 3), alpha=0.25, classes=4, classifier_activation=None)

    def compute():
        import os
        import tempfile
        import h5py
        from keras.src.legacy.saving import legacy_h5_format
        m, _ = _keras_app("MobileNet", kwargs)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.h5")
            with h5py.File(path, "w") as f:
                legacy_h5_format.save_weights_to_hdf5_group(f, m)
            packed = np.frombuffer(lzma.compress(open(path, "rb").read()), np.uint8)
        x = _batch((32, 32, 3))
        return dict(file=packed, x=x, y=np.asarray(m.predict(x, verbose=0)))
    ref = case(compute)
    m = bf.applications.MobileNet(weights=_write(tmp_path, ref["file"], "m.h5"), **kwargs)
    y = m.predict(ref["x"], verbose=0)
    assert np.abs(y - ref["y"]).max() <= 1e-4 * np.abs(ref["y"]).max()
    other = bf.applications.MobileNet(weights=None, input_shape=(32, 32, 3), alpha=0.5, classes=4)
    with pytest.raises(ValueError, match="expects weights"):
        other.load_weights(_write(tmp_path, ref["file"], "m.h5"))


def test_fine_tuning_frozen_base_with_a_new_head_takes_keras_steps_with_an_exact_plan(tmp_path):
    """MobileNetV2 (alpha 0.35, 32x32) frozen, a new softmax head: two SGD steps of 4 images give Keras's losses
    and head weights (the base's weights and BatchNormalization statistics stay), and the fit's plan is its
    arenas to the byte"""
    kwargs = dict(include_top=False, input_shape=(32, 32, 3), alpha=0.35, pooling="avg")
    x = _batch((32, 32, 3), 4)
    y = np.array([0, 1, 2, 1], np.float32)

    def compute():
        keras = keras_ref.load()
        base, packed = _keras_app("MobileNetV2", kwargs)
        head = np.linspace(-0.2, 0.2, base.output_shape[-1] * 3, dtype=np.float32).reshape(-1, 3)
        base.trainable = False
        m = keras.Sequential([base, keras.layers.Dense(3, activation="softmax")])
        m.layers[-1].set_weights([head, np.zeros(3, np.float32)])
        m.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
        out = dict(file=packed, head=head, losses=[], kernels=[])
        for _ in range(2):
            out["losses"].append(m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"][0])
            out["kernels"].append(np.asarray(m.layers[-1].get_weights()[0]))
        return out
    ref = case(compute)
    base = bf.applications.MobileNetV2(weights=_write(tmp_path, ref["file"]), **kwargs)
    before = base.get_weights()
    base.trainable = False
    m = bf.Sequential([base, bf.layers.Dense(3, activation="softmax")])
    m.build((None, 32, 32, 3))
    m.layers[-1].set_weights([ref["head"], np.zeros(3, np.float32)])
    m.compile(bf.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    assert_plan_equals_arenas(m, x, y, batch_size=4)   # one step: the whole batch (its order does not matter)
    np.testing.assert_allclose(m.layers[-1].get_weights()[0], ref["kernels"][0], rtol=1e-4, atol=1e-6)
    loss = m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    np.testing.assert_allclose(loss, ref["losses"][1], rtol=1e-4)
    np.testing.assert_allclose(m.layers[-1].get_weights()[0], ref["kernels"][1], rtol=1e-4, atol=1e-6)
    for a, b in zip(base.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_resnet50_at_224_gets_a_memory_plan_and_an_automatic_batch_size_without_data():
    m = bf.applications.ResNet50(weights=None)
    assert m.input_shape == (None, 224, 224, 3) and m.output_shape == (None, 1000)
    m.compile("adam", "sparse_categorical_crossentropy")
    plan = m.estimate_memory(batch_size="auto", memory_limit="3GiB")
    assert plan.fits and 1 <= plan.batch_size <= plan.max_batch_size
    params = next(e.bytes for e in plan.breakdown if e.name.startswith("parameters"))
    assert params >= 4 * m.count_params() == 4 * 25636712
    assert not m.estimate_memory(batch_size=plan.max_batch_size + 1, memory_limit="3GiB").fits


def test_weights_imagenet_is_refused_naming_the_download_and_a_missing_file_naming_weights(tmp_path):
    with pytest.raises(ValueError, match="weights='imagenet' needs a download.*pass its path as weights="):
        bf.applications.ResNet50()
    with pytest.raises(ValueError, match="`weights` argument"):
        bf.applications.MobileNetV2(weights=str(tmp_path / "missing.h5"))
    with pytest.raises(ValueError, match="pooling must be None, 'avg' or 'max'"):
        bf.applications.VGG16(weights=None, include_top=False, input_shape=(32, 32, 3), pooling="mean")
    with pytest.raises(ValueError, match="at least 75x75"):
        bf.applications.InceptionV3(weights=None, include_top=False, input_shape=(32, 32, 3))


def test_input_tensor_from_an_earlier_layer_makes_the_model_start_at_its_source_input():
    inp = bf.Input((32, 32, 3))
    x = bf.layers.Rescaling(1.0 / 255)(inp)
    m = bf.applications.MobileNet(weights=None, input_tensor=x, alpha=0.25, classes=2)
    assert m.inputs[0] is inp and m.layers[1].name == "rescaling"
    assert m.predict(_batch((32, 32, 3)), verbose=0).shape == (2, 2)


@pytest.mark.parametrize("module,mode", [("resnet50", "caffe"), ("resnet_v2", "tf"), ("densenet", "torch"),
                                         ("efficientnet", None)])
def test_preprocess_input_is_keras_preprocessing(module, mode):
    x = _batch((4, 4, 3))
    ref = case(lambda: np.asarray(getattr(keras_ref.load().applications, module).preprocess_input(x.copy())))
    np.testing.assert_allclose(getattr(bf.applications, module).preprocess_input(x.copy()), ref, rtol=1e-6)


def test_decode_predictions_reads_a_local_class_index_and_refuses_a_missing_one(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    preds = np.zeros((2, 1000), np.float32)
    preds[0, [7, 3]], preds[1, 999] = (0.6, 0.3), 1.0
    with pytest.raises(FileNotFoundError, match="downloads nothing.*imagenet_class_index.json"):
        bf.applications.resnet50.decode_predictions(preds)
    index = {str(i): [f"n{i:08d}", f"class {i}"] for i in range(1000)}
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "imagenet_class_index.json").write_text(json.dumps(index))
    top = bf.applications.resnet50.decode_predictions(preds, top=2)
    assert [t[:2] for t in top[0]] == [("n00000007", "class 7"), ("n00000003", "class 3")]
    assert top[1][0][:2] == ("n00000999", "class 999")
    with pytest.raises(ValueError, match=r"\(samples, 1000\)"):
        bf.applications.imagenet_utils.decode_predictions(preds[:, :10])
