"""keras.utils' split_dataset, get_file, Progbar, array_to_img / save_img,
Config, get_source_inputs and the interactive-logging switch: boundfit's
against Keras 3's on the same inputs (Keras's results recorded,
helpers/keras_recorded.py), and each bad argument's error. get_file is
tested through file:// URLs (urllib's same path as https://; this machine
has no network), including a hostile archive that must write nothing."""

import io
import logging
import os
import re
import tarfile
import tempfile
import zipfile
from contextlib import redirect_stdout

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from helpers.keras_recorded import case

utils = bf.utils


def _split_data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(50, 3)).astype("float32"), np.arange(50)


@pytest.mark.parametrize("kw", [dict(left_size=0.8), dict(right_size=7), dict(left_size=10, right_size=0.5),
                                dict(left_size=0.6, shuffle=True, seed=3), dict(left_size=12, right_size=12)])
def test_split_dataset_gives_keras_sides_and_order(kw):
    x, y = _split_data()

    def compute():
        left, right = keras_ref.load().utils.split_dataset((x, y), **kw)
        return [np.stack([s[1].numpy() for s in side]) for side in (left, right)]

    ref = case(compute)
    left, right = utils.split_dataset((x, y), **kw)
    for side, want in zip((left, right), ref):
        got = np.array([s[1] for s in side])
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.stack([s[0] for s in side]), x[want])
        assert len(side) == side.cardinality() == len(want)


def test_split_dataset_of_an_array_and_a_dict_keeps_the_structure():
    x, y = _split_data()
    left, right = utils.split_dataset(x, left_size=0.5)
    assert isinstance(next(iter(left)), np.ndarray) and len(left) == len(right) == 25
    left, right = utils.split_dataset({"a": x, "b": y}, right_size=5)
    first = next(iter(right))
    assert set(first) == {"a", "b"} and first["b"] == 45


def test_a_split_batched_trains_a_model_and_a_shuffled_split_reorders_each_epoch():
    x, y = _split_data()
    yf = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
    train, val = utils.split_dataset((x, yf), left_size=0.8, shuffle=True, seed=1)
    batched = train.shuffle(64, seed=0).batch(8).prefetch(2)
    assert len(batched) == 5 and len(val.batch(8, drop_remainder=True)) == 1
    first = batched[0][0].copy()
    batched.on_epoch_end()
    assert not np.array_equal(first, batched[0][0])      # reshuffled
    assert sorted(map(tuple, np.concatenate([batched[i][0] for i in range(len(batched))]))) == \
        sorted(map(tuple, np.stack([s[0] for s in train])))   # the same samples
    m = bf.Sequential([bf.layers.Input((3,)), bf.layers.Dense(1, activation="sigmoid")])
    m.compile("sgd", "binary_crossentropy")
    hist = m.fit(batched, epochs=2, validation_data=val.batch(8), verbose=0)
    assert len(hist.history["loss"]) == 2 and np.isfinite(hist.history["val_loss"]).all()


@pytest.mark.parametrize("kw, err", [(dict(), "left_size, right_size"), (dict(left_size=0.0), "left_size"),
                                     (dict(left_size=50), "left_size"), (dict(right_size="a"), "right_size"),
                                     (dict(left_size=0.7, right_size=0.5), "over 1"),
                                     (dict(left_size=30, right_size=30), "over the 50")])
def test_split_dataset_rejects_bad_sizes_naming_them(kw, err):
    x, y = _split_data()
    with pytest.raises((ValueError, TypeError), match=err):
        utils.split_dataset((x, y), **kw)
    with pytest.raises(ValueError, match="different lengths"):
        utils.split_dataset((x, y[:3]), left_size=0.5)
    with pytest.raises(TypeError, match="dataset must be"):
        utils.split_dataset(42, left_size=0.5)


def _tar(path, members):
    with tarfile.open(path, "w:gz") as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


def test_get_file_fetches_once_checks_the_hash_and_extracts(tmp_path):
    src = tmp_path / "data.csv"
    src.write_bytes(b"a,b\n1,2\n")
    sha = "a" * 64
    with redirect_stdout(io.StringIO()):
        path = utils.get_file("data.csv", origin=src.as_uri(), cache_dir=tmp_path / "cache")
        assert path == str(tmp_path / "cache" / "datasets" / "data.csv") and open(path, "rb").read() == src.read_bytes()
        src.write_bytes(b"changed")                       # cached: not fetched again
        assert open(utils.get_file("data.csv", origin=src.as_uri(), cache_dir=tmp_path / "cache"), "rb").read() \
            == b"a,b\n1,2\n"
        with pytest.raises(bf.DataError, match="does not match the sha256 hash"):
            utils.get_file("other.csv", origin=src.as_uri(), cache_dir=tmp_path / "cache", file_hash=sha)
        assert not os.path.exists(tmp_path / "cache" / "datasets" / "other.csv")
        import hashlib
        good = hashlib.md5(b"changed").hexdigest()
        p = utils.get_file(origin=src.as_uri(), cache_dir=tmp_path / "cache", md5_hash=good, cache_subdir="x")
        assert p.endswith(os.path.join("x", "data.csv"))
        arch = tmp_path / "pack.tar.gz"
        _tar(arch, [("pack/a.txt", b"A"), ("pack/sub/b.txt", b"B")])
        out = utils.get_file("pack.tar.gz", origin=arch.as_uri(), cache_dir=tmp_path / "cache", extract=True)
        assert out.endswith("pack_extracted") and open(os.path.join(out, "pack", "sub", "b.txt")).read() == "B"
        z = tmp_path / "z.zip"
        with zipfile.ZipFile(z, "w") as f:
            f.writestr("q/c.txt", "C")
        out = utils.get_file(origin=z.as_uri(), cache_dir=tmp_path / "cache", extract=True)
        assert open(os.path.join(out, "q", "c.txt")).read() == "C"


def test_get_file_falls_back_to_the_temporary_folder_when_the_cache_cannot_be_made(tmp_path):
    src = tmp_path / "fallback-check.bin"
    src.write_bytes(os.urandom(16))
    (tmp_path / "a_file").write_bytes(b"")
    with redirect_stdout(io.StringIO()):
        path = utils.get_file(f"boundfit-{os.getpid()}-{tmp_path.name}.bin", origin=src.as_uri(),
                              cache_dir=tmp_path / "a_file" / "sub")
    try:
        assert os.path.dirname(path) == os.path.join(tempfile.gettempdir(), ".keras", "datasets")
        assert open(path, "rb").read() == src.read_bytes()
    finally:
        os.unlink(path)


@pytest.mark.parametrize("member", ["../evil.txt", "/tmp/boundfit_evil_abs.txt", "ok/../../evil.txt"])
def test_get_file_refuses_an_archive_writing_outside_its_folder_and_writes_nothing(tmp_path, member):
    arch = tmp_path / "bad.tar.gz"
    _tar(arch, [("fine.txt", b"x"), (member, b"evil")])
    with redirect_stdout(io.StringIO()), pytest.raises(bf.DataError, match="would be written outside"):
        utils.get_file("bad.tar.gz", origin=arch.as_uri(), cache_dir=tmp_path / "cache", extract=True)
    assert not os.path.exists(tmp_path / "cache" / "evil.txt") and not os.path.exists(tmp_path / "evil.txt")
    assert not os.path.exists("/tmp/boundfit_evil_abs.txt")
    assert not os.path.exists(tmp_path / "cache" / "datasets" / "bad_extracted" / "fine.txt")


def test_get_file_errors_name_the_argument(tmp_path):
    with pytest.raises(ValueError, match="origin"):
        utils.get_file("a")
    with pytest.raises(ValueError, match="fname must be a file name"):
        utils.get_file("a/b", origin="file:///x", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="hash_algorithm"):
        utils.get_file("a", origin="file:///x", cache_dir=tmp_path, file_hash="ab", hash_algorithm="sha1")
    with redirect_stdout(io.StringIO()), pytest.raises(bf.DataError, match="URL fetch failure"):
        utils.get_file("a", origin=(tmp_path / "missing").as_uri(), cache_dir=tmp_path)
    assert os.listdir(tmp_path / "datasets") == []       # no partial file left


def _final_values(text):
    line = [s for s in re.split(r"[\r\n]", text) if s.strip()][-1]
    return {k: float(v) for k, v in re.findall(r" - (\w+): ([-\d.e+]+)", line)}


def test_progbar_averages_values_over_steps_as_keras_does():
    steps = [(1, [("loss", 4.0), ("acc", 0.5)]), (3, [("loss", 1.0), ("acc", 0.25)]), (4, [("loss", 2.0)])]

    def run(progbar):
        buf = io.StringIO()
        with redirect_stdout(buf):
            bar = progbar(4, stateful_metrics=["acc"], interval=0)
            for current, values in steps:
                bar.update(current, values)
        return buf.getvalue()

    ref = case(lambda: run(keras_ref.load().utils.Progbar))
    got = run(utils.Progbar)
    want = _final_values(ref)
    assert _final_values(got) == pytest.approx(want, abs=1e-4)
    assert want == pytest.approx({"loss": (4 + 2 * 1 + 2) / 4, "acc": 0.25})
    buf = io.StringIO()
    with redirect_stdout(buf):
        bar = utils.Progbar(None, verbose=2)
        bar.add(2, [("x", 1.0)])
        bar.add(3, [("x", 2.0)])
    assert buf.getvalue() == ""                         # verbose=2, no target: nothing until finalize
    with pytest.raises(ValueError, match="verbose"):
        utils.Progbar(3, verbose=5)
    with pytest.raises(ValueError, match="target"):
        utils.Progbar(-1)


def test_disabled_interactive_logging_sends_the_final_line_to_logging(caplog):
    assert utils.is_interactive_logging_enabled()
    utils.disable_interactive_logging()
    try:
        buf = io.StringIO()
        with redirect_stdout(buf), caplog.at_level(logging.INFO, logger="boundfit"):
            bar = utils.Progbar(2, interval=0)
            bar.update(1, [("loss", 1.0)])
            bar.update(2, [("loss", 3.0)])
        assert buf.getvalue() == "" and len(caplog.records) == 1 and "loss: 2.0000" in caplog.records[0].message
    finally:
        utils.enable_interactive_logging()


@pytest.mark.parametrize("shape, kw", [((5, 4, 3), {}), ((5, 4, 1), {}), ((3, 5, 4), dict(data_format="channels_first")),
                                       ((5, 4, 4), dict(scale=False)), ((5, 4, 1), dict(scale=False))])
def test_array_to_img_and_save_img_match_keras(tmp_path, shape, kw):
    x = np.random.default_rng(1).uniform(0, 300 if kw.get("scale") is False else 2, size=shape).astype("float32")
    if kw.get("scale") is False and shape[-1] == 4:
        x = np.clip(x, 0, 255)
    ref = case(lambda: [np.asarray(keras_ref.load().utils.array_to_img(x, **kw))])[0]
    img = utils.array_to_img(x, **kw)
    np.testing.assert_array_equal(np.asarray(img), ref)
    path = tmp_path / ("a.tiff" if img.mode == "I" else "a.png")    # PNG has no 32-bit grey
    utils.save_img(path, x, **kw)
    from PIL import Image
    np.testing.assert_array_equal(np.asarray(Image.open(path)), ref)
    with pytest.raises(ValueError, match="rank 3"):
        utils.array_to_img(x[0])
    with pytest.raises(ValueError, match="channels"):
        utils.array_to_img(np.zeros((2, 2, 2)))


def test_config_is_a_freezable_attribute_dict_as_keras_has_it():
    c = utils.Config(learning_rate=0.1)
    c.seed = 3
    c["momentum"] = 0.9
    assert c.learning_rate == 0.1 and c["seed"] == 3 and dict(c.items()) == c.as_dict() and len(c) == 3
    assert c.to_json() == '{"learning_rate": 0.1, "seed": 3, "momentum": 0.9}'
    c.freeze()
    with pytest.raises(ValueError, match="frozen"):
        c.seed = 4
    with pytest.raises(ValueError, match="frozen"):
        c.update(a=1)
    c.unfreeze()
    del c.seed
    assert "seed" not in c
    with pytest.raises(AttributeError, match="nope"):
        c.nope


def test_get_source_inputs_and_the_dtype_helpers_as_keras():
    a, b = bf.layers.Input((3,), name="a"), bf.layers.Input((3,), name="b")
    c = bf.layers.Input((3,), name="c")
    out = bf.layers.Add()([bf.layers.Dense(3)(b), bf.layers.Multiply()([a, b])])
    assert utils.get_source_inputs(out) == [b, a]
    assert utils.get_source_inputs(c) == [c]
    assert utils.is_keras_tensor(out) and not utils.is_keras_tensor(np.ones(2))
    assert [utils.standardize_dtype(d) for d in (None, float, int, bool, "int8", np.float16)] == \
        ["float32", "float32", "int32", "bool", "int8", "float16"]     # Keras's under the JAX backend
    with pytest.raises(ValueError, match="Invalid dtype"):
        utils.standardize_dtype("float5")
