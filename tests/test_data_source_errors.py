"""Failures of the data itself: a user's exception from a Sequence or a
generator reaches the caller as it is (as in Keras 3), with the batch index as
a note; a memory-mapped file truncated under a run raises DataError naming the
file and its sizes instead of killing the process with SIGBUS."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers

rng = np.random.default_rng(5)
X = rng.standard_normal((96, 6)).astype(np.float32)
Y = rng.integers(0, 3, 96)


class ShardMissing(Exception):
    """A user's own exception type."""


def model():
    bf.utils.set_random_seed(7)
    m = bf.Sequential([layers.Dense(8, activation="relu", input_shape=(6,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


class Shards(bf.utils.PyDataset):
    """Batches of 16; batch `fail_at` raises the user's ShardMissing."""

    def __init__(self, fail_at=None, n=6):
        super().__init__()
        self.fail_at, self.n = fail_at, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ShardMissing(f"shard {i} is missing")
        return X[i * 16:(i + 1) * 16], Y[i * 16:(i + 1) * 16]


def _three_batch_weights():
    ref = model()
    ref.fit(Shards(n=3), epochs=1, shuffle=False, verbose=0)
    return ref.get_weights()


def test_user_exception_from_a_sequence_arrives_itself_with_the_batch_as_a_note():
    m = model()
    with pytest.raises(ShardMissing, match="shard 3 is missing") as ei:
        m.fit(Shards(fail_at=3), epochs=1, shuffle=False, verbose=0)
    assert not isinstance(ei.value, bf.DataError)
    assert "boundfit: raised by the data source while fetching batch 3" in ei.value.__notes__
    # the weights of the last completed step (batch 2), and the model trains on
    for a, b in zip(m.get_weights(), _three_batch_weights()):
        np.testing.assert_array_equal(a, b)
    m.fit(Shards(), epochs=1, verbose=0)


def test_user_exception_from_a_generator_arrives_itself_with_the_batch_as_a_note():
    def batches():
        for i in range(6):
            if i == 3:
                raise ShardMissing("the reader lost its connection")
            yield X[i * 16:(i + 1) * 16], Y[i * 16:(i + 1) * 16]
    m = model()
    with pytest.raises(ShardMissing, match="lost its connection") as ei:
        m.fit(batches(), steps_per_epoch=6, epochs=1, verbose=0)
    assert ei.value.__notes__ == ["boundfit: raised by the data source while fetching batch 3"]
    for a, b in zip(m.get_weights(), _three_batch_weights()):
        np.testing.assert_array_equal(a, b)


def test_user_exception_at_the_first_batch_leaves_the_model_untouched():
    m = model()
    w0 = m.get_weights()
    for call in (lambda: m.fit(Shards(fail_at=0), verbose=0), lambda: m.evaluate(Shards(fail_at=0), verbose=0),
                 lambda: m.predict(Shards(fail_at=0), verbose=0)):
        with pytest.raises(ShardMissing) as ei:
            call()
        assert ei.value.__notes__[-1] == "boundfit: raised by the data source while fetching batch 0"
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)


def test_a_malformed_batch_is_still_a_data_error():
    class Short(Shards):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return (x, y[:3]) if i == 2 else (x, y)
    with pytest.raises(bf.DataError, match="batch 2: x and y have different lengths") as ei:
        model().fit(Short(), epochs=1, shuffle=False, verbose=0)
    assert ei.value.batch_index == 2


# ---- memory-mapped files truncated under a run ------------------------------
# In a child process: were both guards gone, SIGBUS would kill it, not pytest.
TRUNCATE = r"""
import json, os, sys
import numpy as np
import boundfit as bf
from boundfit import layers
from boundfit.engine import data as data_mod

d = sys.argv[1]
rng = np.random.default_rng(0)
xs = rng.standard_normal((512, 64)).astype(np.float32)      # 256-byte rows after a 128-byte header
ys = rng.integers(0, 3, 512)
out = {}

def make():
    bf.utils.set_random_seed(1)
    m = bf.Sequential([layers.Dense(8, activation="relu", input_shape=(64,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return m

def fresh(name, a):
    path = os.path.join(d, name)
    np.save(path, a)
    return path, np.load(path, mmap_mode="r")

def caught(fn):
    try:
        fn()
    except bf.DataError as e:
        return {"type": "DataError", "msg": str(e), "batch": e.batch_index}
    except Exception as e:
        return {"type": type(e).__name__, "msg": str(e)}
    return {"type": None}

def same(a, b):
    return all(np.array_equal(u, v) for u, v in zip(a, b))

# 1. truncated between epochs: the check before the next epoch's first batch refuses it
path, x = fresh("x1.npy", xs)
m, seen = make(), {}
def cut(e, logs):
    seen["w"] = m.get_weights()
    os.truncate(path, 8192)
cb = bf.callbacks.LambdaCallback(on_epoch_end=cut)
out["between_epochs"] = caught(lambda: m.fit(x, ys, batch_size=16, epochs=3, verbose=0, callbacks=[cb]))
out["between_epochs"]["kept"] = same(m.get_weights(), seen["w"])
out["between_epochs"]["trains_on"] = bool(np.isfinite(m.fit(xs, ys, epochs=1, verbose=0).history["loss"][0]))

# 2. truncated after the check (the check skipped): the engine's read refuses the first page past the end
#    (row 63 ends beyond byte 16384), so batch 3 of the next epoch fails; steps 0-2 are kept
data_mod.check_files = lambda files, batch: None
path, x = fresh("x2.npy", xs)
m = make()
cb = bf.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: os.truncate(path, 16384))
out["engine_read"] = caught(lambda: m.fit(x, ys, batch_size=16, epochs=2, shuffle=False, verbose=0,
                                          callbacks=[cb]))
ref = make()
ref.fit(xs, ys, batch_size=16, epochs=1, shuffle=False, verbose=0)
ref.fit(xs, ys, batch_size=16, epochs=1, steps_per_epoch=3, shuffle=False, verbose=0)
out["engine_read"]["kept"] = same(m.get_weights(), ref.get_weights())

# 3. the engine's read of other layouts: int64 labels (staged), a strided float64 view (walked), in
#    evaluate and predict
m = make()
ypath, y = fresh("y3.npy", ys)
os.truncate(ypath, 4096)
out["labels"] = caught(lambda: m.evaluate(xs, y, batch_size=64, verbose=0))
xpath, x = fresh("x3.npy", np.repeat(xs.astype(np.float64), 2, axis=1))
os.truncate(xpath, 4096)
out["strided"] = caught(lambda: m.predict(x[:, ::2], batch_size=64, verbose=0))
print(json.dumps(out))
"""


def test_a_memory_mapped_file_truncated_under_a_run_raises_data_error_not_sigbus(tmp_path):
    import json
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", TRUNCATE, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    e = out["between_epochs"]
    assert e["type"] == "DataError" and e["batch"] == 0, e
    assert e["msg"] == (f"batch 0: x: the file {tmp_path / 'x1.npy'} is 8192 bytes, {128 + 512 * 256} expected (its "
                        "size when it was mapped): it was truncated while in use, by another process?")
    assert e["kept"] and e["trains_on"]   # the weights of the last completed step, and the model trains on
    e = out["engine_read"]
    assert e["type"] == "DataError" and e["batch"] == 3 and e["kept"], e
    assert e["msg"].startswith(f"batch 3: x: the file {tmp_path / 'x2.npy'} is 16384 bytes"), e
    e = out["labels"]
    assert e["type"] == "DataError" and f"y: the file {tmp_path / 'y3.npy'} is 4096 bytes" in e["msg"], e
    e = out["strided"]
    assert e["type"] == "DataError" and f"x: the file {tmp_path / 'x3.npy'} is 4096 bytes" in e["msg"], e


def test_memory_mapped_arrays_of_any_layout_train_as_the_same_arrays_in_memory(tmp_path):
    xs = rng.standard_normal((96, 12)).astype(np.float64)
    np.save(tmp_path / "x.npy", xs)
    np.save(tmp_path / "y.npy", Y)
    np.save(tmp_path / "w.npy", np.linspace(0.5, 1.5, 96).astype(np.float16))
    xm, ym = bf.data.from_npy(tmp_path / "x.npy", tmp_path / "y.npy")
    wm = np.load(tmp_path / "w.npy", mmap_mode="r")
    weights = []
    for x, y, w in ((xs[:, ::2], Y, np.asarray(wm)), (xm[:, ::2], ym, wm)):   # strided float64, int64, float16
        m = model()
        m.fit(x, y, sample_weight=w, batch_size=16, epochs=2, verbose=0)
        weights.append(m.get_weights() + [m.predict(x, verbose=0)])
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)
