"""Data for models with several inputs and outputs, used in place: x / y as
lists, tuples or dicts (by input / output name), memmaps of any dtype,
validation_data of the same forms, and Keras Sequences / generators yielding
(x_tuple_or_dict, y_tuple_or_dict[, sample_weight]). The engine gathers each
array's rows into its columns of the packed batch (csrc/core/gather.c), so
the updated weights equal, bit for bit, those of the same model fed one
pre-packed float32 copy; and against Keras 3. Errors name the input / output
and the argument, before anything is touched. A fresh process shows the fit
of a two-input model on a uint8 memmap grows RSS by no more than its plan
plus the file's own pages (no copy)."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import boundfit as bf

import keras_ref

rng = np.random.default_rng(21)
N = 40
IMG = rng.integers(0, 4, (N, 6, 6, 2)).astype(np.uint8)      # small values: the math stays tame
TAB = rng.standard_normal((N, 5))                              # float64
YC = rng.integers(0, 3, N)                                     # int64 class ids
YR = rng.standard_normal((N, 2))                               # float64
SW = rng.uniform(0.5, 1.5, N)


def two_by_two(lib):
    """An image branch and a tabular branch, concatenated; a class head and a regression head."""
    L = lib.layers
    img, tab = lib.Input((6, 6, 2), name="image"), lib.Input((5,), name="table")
    a = L.Flatten()(L.Conv2D(3, 3, activation="relu", name="conv")(img))
    b = L.Dense(4, activation="tanh", name="tab_dense")(tab)
    h = L.Dense(6, activation="relu", name="trunk")(L.Concatenate()([a, b]))
    return lib.Model({"image": img, "table": tab},
                     [L.Dense(3, activation="softmax", name="cls")(h), L.Dense(2, name="reg")(h)])


LOSS = {"cls": "sparse_categorical_crossentropy", "reg": "mse"}


def fresh(w0=None):
    m = two_by_two(bf)
    if w0 is not None:
        m.set_weights(w0)
    m.compile(bf.optimizers.SGD(0.05, momentum=0.9), LOSS, metrics={"cls": ["accuracy"]})
    return m


def packed_reference(w0, batch=16, epochs=1):
    """The same SGD steps with the data packed by hand into one float32 x row
    and one y row, handed to the engine's run directly (what the deleted
    Python packing did)."""
    m = fresh(w0)
    xp = np.concatenate([IMG.reshape(N, -1).astype(np.float32), TAB.astype(np.float32)], axis=1)
    yp = np.concatenate([YC[:, None].astype(np.float32), YR.astype(np.float32)], axis=1)
    run = m._engine.open_run("train", batch)
    try:
        for _ in range(epochs):
            run.train(xp, yp, None, N, batch, 0, -(-N // batch))
    finally:
        run.close()
    return m.get_weights()


def assert_same(a, b):
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def memmaps(tmp_path):
    paths = {}
    for name, arr in (("img", IMG), ("tab", TAB), ("yc", YC), ("yr", YR)):
        np.save(tmp_path / f"{name}.npy", arr)
        paths[name] = np.load(tmp_path / f"{name}.npy", mmap_mode="r")
    return paths


class Batches(bf.utils.Sequence):
    def __init__(self, form, bs=16, sw=False):
        super().__init__()
        self.form, self.bs, self.sw = form, bs, sw

    def __len__(self):
        return -(-N // self.bs)

    def __getitem__(self, i):
        s = slice(i * self.bs, (i + 1) * self.bs)
        if self.form == "dict":
            out = ({"table": TAB[s], "image": IMG[s]}, {"reg": YR[s], "cls": YC[s]})
        else:
            out = ((IMG[s], TAB[s]), (YC[s], YR[s]))
        return out + (SW[s],) if self.sw else out


def test_lists_dicts_tuples_and_memmaps_of_any_dtype_train_as_one_packed_float32_copy_bit_for_bit(tmp_path):
    w0 = two_by_two(bf).get_weights()
    ref = packed_reference(w0)
    mm = memmaps(tmp_path)
    forms = {
        "lists": ([IMG, TAB], [YC, YR]),
        "dicts": ({"table": TAB, "image": IMG, "unused": YC}, {"reg": YR, "cls": YC}),
        "tuples": ((IMG, TAB), (YC, YR)),
        "memmaps (uint8, float64, int64)": ({"image": mm["img"], "table": mm["tab"]}, [mm["yc"], mm["yr"]]),
        "strided views, int32 labels": ([np.asfortranarray(IMG), np.repeat(TAB, 2, axis=1)[:, ::2]],
                                        [YC.astype(np.int32), np.repeat(YR, 2, axis=1)[:, ::2]]),
    }
    for name, (x, y) in forms.items():
        m = fresh(w0)
        m.fit(x, y, batch_size=16, shuffle=False, verbose=0)
        for a, b in zip(m.get_weights(), ref):
            np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64, np.bool_])
def test_every_dtype_and_layout_is_gathered_exactly_into_its_columns(dtype):
    """A model whose output is its packed row (Concatenate of the flattened
    inputs): the prediction is each array converted to float32, side by side."""
    r = np.random.default_rng(3)
    a = (r.integers(0, 2, (20, 3, 4, 2)) if dtype == np.bool_ else r.integers(-9, 100, (20, 3, 4, 2))).astype(dtype)
    b = r.standard_normal((20, 6))
    i, t = bf.Input((3, 4, 2), name="a"), bf.Input((3,), name="b")
    m = bf.Model([i, t], bf.layers.Concatenate()([bf.layers.Flatten()(i), t]))
    want = np.concatenate([a.reshape(20, -1).astype(np.float32), b[:, ::2].astype(np.float32)], axis=1)
    for layout in (a, np.asfortranarray(a), np.repeat(a, 2, axis=3)[:, :, :, ::2], a[::-1][::-1]):
        got = m.predict({"a": layout, "b": b[:, ::2]}, batch_size=7, verbose=0)
        np.testing.assert_array_equal(got, want)


def test_the_emu_device_and_micro_batches_gather_several_sources_as_the_cpu_does(tmp_path):
    w0 = two_by_two(bf).get_weights()
    mm = memmaps(tmp_path)
    x, y = {"image": mm["img"], "table": mm["tab"]}, {"cls": mm["yc"], "reg": mm["yr"]}
    m = fresh(w0)
    bf.utils.set_random_seed(7)       # the same shuffled order in each fit
    m.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x, y))
    ref = m.get_weights()
    for kw in (dict(device="emu"), dict(micro_batch=5)):
        m = fresh(w0)
        bf.utils.set_random_seed(7)
        m.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x, y), **kw)
        for a, b in zip(m.get_weights(), ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    p = m.predict(x, batch_size=7, device="emu", verbose=0)
    for a, b in zip(p, m.predict([IMG.astype(np.float32), TAB.astype(np.float32)], batch_size=40, verbose=0)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_sequences_and_generators_yielding_tuples_or_dicts_train_as_arrays_do():
    w0 = two_by_two(bf).get_weights()
    m = fresh(w0)
    m.fit([IMG, TAB], [YC, YR], batch_size=16, shuffle=False, verbose=0, sample_weight=SW)
    ref = m.get_weights()
    for src in (Batches("tuple", sw=True), Batches("dict", sw=True),
                ((x, y, w) for x, y, w in (Batches("dict", sw=True)[i] for i in range(3)))):
        m = fresh(w0)
        m.fit(src, shuffle=False, verbose=0)
        assert_same(m.get_weights(), ref)
    # evaluate and predict take them too
    m = fresh(w0)
    e_arr = m.evaluate({"image": IMG, "table": TAB}, {"cls": YC, "reg": YR}, batch_size=16, verbose=0)
    np.testing.assert_allclose(m.evaluate(Batches("dict"), verbose=0), e_arr, rtol=1e-6)
    p = m.predict((IMG, TAB), batch_size=16, verbose=0)
    q = m.predict(Batches("dict"), verbose=0)
    for a, b in zip(p, q):
        np.testing.assert_array_equal(a, b)


def test_validation_data_as_dicts_and_validation_split_over_lists_match_keras():
    keras = keras_ref.load()
    m, k = two_by_two(bf), two_by_two(keras)
    for name in ("conv", "tab_dense", "trunk", "cls", "reg"):
        k.get_layer(name).set_weights(m.get_layer(name).get_weights())
    m.compile(bf.optimizers.SGD(0.05, momentum=0.9), LOSS)
    k.compile(keras.optimizers.SGD(0.05, momentum=0.9), LOSS)
    x, y = {"image": IMG[:32], "table": TAB[:32]}, {"cls": YC[:32], "reg": YR[:32]}
    vd = ({"image": IMG[32:], "table": TAB[32:]}, {"cls": YC[32:], "reg": YR[32:]})
    xf = {"image": IMG[:32].astype(np.float32), "table": TAB[:32].astype(np.float32)}
    yf = {"cls": YC[:32], "reg": YR[:32].astype(np.float32)}
    vf = ({kk: v.astype(np.float32) for kk, v in vd[0].items()}, {"cls": vd[1]["cls"], "reg": vd[1]["reg"].astype(np.float32)})
    hb = m.fit(x, y, validation_data=vd, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    hk = k.fit(xf, yf, validation_data=vf, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    for key in ("loss", "cls_loss", "reg_loss", "val_loss", "val_cls_loss", "val_reg_loss"):
        np.testing.assert_allclose(hb[key], hk[key], rtol=1e-5, err_msg=key)
    for name in ("conv", "tab_dense", "trunk", "cls", "reg"):
        for a, b in zip(m.get_layer(name).get_weights(), k.get_layer(name).get_weights()):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=name)
    # validation_split takes the last rows of every array
    m2 = fresh()
    h = m2.fit([IMG, TAB], [YC, YR], validation_split=0.25, batch_size=8, epochs=1, shuffle=False, verbose=0)
    val = m2.evaluate([IMG[30:], TAB[30:]], [YC[30:], YR[30:]], batch_size=8, verbose=0)
    np.testing.assert_allclose(val[0], h.history["val_loss"][0], rtol=1e-5)


@pytest.mark.parametrize("call,match", [
    (lambda m: m.fit({"image": IMG}, [YC, YR], verbose=0), r"x: no array for input \['table'\]"),
    (lambda m: m.fit({"image": IMG, "table": TAB[:30]}, [YC, YR], verbose=0),
     r"x\['image'\] has 40 samples, x\['table'\] has 30"),
    (lambda m: m.fit([IMG, TAB], [YC, YR[:30]], verbose=0), r"x\[0\] \(input 'image'\) has 40 samples, "
                                                             r"y\[1\] \(output 'reg'\) has 30"),
    (lambda m: m.fit(IMG, [YC, YR], verbose=0), r"x: the model has 2 inputs \['image', 'table'\]; pass a list"),
    (lambda m: m.fit([IMG, TAB, TAB], [YC, YR], verbose=0), "got a list of 3"),
    (lambda m: m.fit([IMG, TAB], {"cls": YC}, verbose=0), r"y: no array for output \['reg'\]"),
    (lambda m: m.fit([IMG, TAB[:, :4]], [YC, YR], verbose=0),
     r"x\[1\] \(input 'table'\) has per-sample shape \(4,\), the model expects \(5,\)"),
    (lambda m: m.fit([IMG, TAB], [YR, YR], verbose=0), r"y\[0\] \(output 'cls'\) must hold one class id"),
    (lambda m: m.fit([IMG, TAB.astype(str)], [YC, YR], verbose=0), r"x\[1\] \(input 'table'\) has dtype <U"),
    (lambda m: m.fit([IMG, TAB], [YC, YR], validation_data=({"image": IMG}, [YC, YR]), verbose=0),
     r"validation_data\[0\]: no array for input \['table'\]"),
    (lambda m: m.fit([IMG, TAB], [YC, YR], validation_data=([IMG, TAB], {"cls": YC, "reg": YR[:, :1]}), verbose=0),
     r"validation_data\[1\]\['reg'\] has per-sample shape \(1,\)"),
    (lambda m: m.evaluate({"image": IMG, "table": TAB}, [YC], verbose=0), "y: the model has 2 outputs"),
    (lambda m: m.predict({"table": TAB}, verbose=0), r"x: no array for input \['image'\]"),
])
def test_bad_multi_input_data_names_the_input_or_output_and_touches_nothing(call, match):
    m = fresh()
    w0 = m.get_weights()
    with pytest.raises(bf.DataError, match=match):
        call(m)
    assert_same(m.get_weights(), w0)


class BadBatches(Batches):
    def __init__(self, mode):
        super().__init__("dict")
        self.mode = mode

    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        if i == 1 and self.mode == "shape":
            x["table"] = x["table"][:, :3]
        if i == 1 and self.mode == "missing":
            del y["reg"]
        if i == 1 and self.mode == "length":
            x["image"] = x["image"][:4]
        if i == 1 and self.mode == "label shape":
            y["reg"] = y["reg"][:, :1]
        if i == 1 and self.mode == "no y":
            return (x,)
        return x, y


@pytest.mark.parametrize("mode,match", [
    ("shape", r"batch 1: x\['table'\] has per-sample shape \(3,\) and dtype float64, the first batch had \(5,\)"),
    ("missing", r"batch 1: y: no array for output \['reg'\]"),
    ("length", r"batch 1: x\['image'\] has 4 samples, x\['table'\] has 16"),
    ("label shape", r"batch 1: y\['reg'\] has per-sample shape \(1,\), the first batch had \(2,\)"),
    ("no y", "batch 1: y missing, unlike the first batch"),
])
def test_a_bad_batch_of_a_multi_input_sequence_is_named_and_the_earlier_steps_kept(mode, match):
    m = fresh()
    w0 = m.get_weights()
    with pytest.raises(bf.DataError, match=match) as ei:
        m.fit(BadBatches(mode), shuffle=False, verbose=0)
    assert ei.value.batch_index == 1
    assert not all(np.array_equal(a, b) for a, b in zip(m.get_weights(), w0))   # batch 0 was trained on


def test_the_engine_takes_one_array_per_input_or_one_packed_array_and_refuses_other_layouts():
    m = fresh()
    run = m._engine.open_run("train", 8)
    try:
        xs = (IMG[:8].reshape(8, -1).astype(np.float32), TAB[:8])
        with pytest.raises(ValueError, match=r"x\[1\] has 72 values per sample, input 1 needs 5"):
            run.train((IMG[:8], IMG[:8]), (YC[:8], YR[:8]), None, 8, 8, 0, 1)
        with pytest.raises(ValueError, match="x has 3 arrays, the model has 2 inputs"):
            run.train(xs + (TAB[:8],), (YC[:8], YR[:8]), None, 8, 8, 0, 1)
        with pytest.raises(ValueError, match=r"y\[1\] has 1 values per sample, the loss of output 1 needs 2"):
            run.train(xs, (YC[:8], YC[:8]), None, 8, 8, 0, 1)
        with pytest.raises(bf.DataError, match="at least 8 rows"):
            run.train((xs[0], TAB[:4]), (YC[:8], YR[:8]), None, 8, 8, 0, 1)
        with pytest.raises(TypeError, match=r"x\[1\] must be a NumPy array, got list"):
            run.train((xs[0], TAB[:8].tolist()), (YC[:8], YR[:8]), None, 8, 8, 0, 1)
        with pytest.raises(ValueError, match="x: between 1 and 256 arrays, got 257"):
            run.train((xs[0],) * 257, (YC[:8], YR[:8]), None, 8, 8, 0, 1)
        run.train(xs, (YC[:8], YR[:8]), None, 8, 8, 0, 1)   # a flat image is the same row
    finally:
        run.close()


def test_a_dict_batch_for_a_subclassed_model_not_traced_yet_is_refused_with_the_reason():
    class Two(bf.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = bf.layers.Dense(2), bf.layers.Dense(2)

        def call(self, inputs, training=None):
            return self.a(inputs[0]) + self.b(inputs[1])

    m = Two()
    m.compile("sgd", "mse")
    with pytest.raises(bf.DataError, match="batch 0: x: a dict of arrays needs a built model"):
        m.fit(iter([({"p": TAB, "q": TAB}, YR)]), verbose=0)
    h = m.fit(iter([((TAB, TAB[:, :3]), YR)] * 2), verbose=0)   # a tuple: one array per input of call()
    assert np.isfinite(h.history["loss"][0])


FRESH_PROCESS = """
import numpy as np, boundfit as bf
from boundfit import layers
from boundfit.runtime import budget
bf.utils.set_random_seed(0)
img = np.load(IMG_PATH, mmap_mode="r"); tab = np.load(TAB_PATH, mmap_mode="r")
y = np.arange(len(img)) % 10
i, t = bf.Input(img.shape[1:], name="image"), bf.Input(tab.shape[1:], name="table")
h = layers.concatenate([layers.Dense(8, activation="relu")(layers.Flatten()(i)), layers.Dense(8)(t)])
m = bf.Model([i, t], layers.Dense(10, activation="softmax")(h))
m.compile("sgd", "sparse_categorical_crossentropy")
bs = 512
plan = m.estimate_memory(bs, shuffle_rows=len(img))
new = plan.host_bytes - plan.held_bytes
open("/proc/self/clear_refs", "w").write("5")                # peak RSS := RSS now
r0 = budget.process_usage_bytes()
m.fit({"image": img, "table": tab}, y, batch_size=bs, verbose=0)
print("GROWTH", new, budget.peak_rss_bytes() - r0, img.nbytes + tab.nbytes)
"""


def test_fit_of_a_two_input_model_on_a_uint8_memmap_in_a_fresh_process_makes_no_copy(tmp_path):
    n = 12000
    r = np.random.default_rng(0)
    np.save(tmp_path / "img.npy", r.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8))   # 35 MiB on disk
    np.save(tmp_path / "tab.npy", r.standard_normal((n, 16)))                           # float64
    code = FRESH_PROCESS.replace("IMG_PATH", repr(str(tmp_path / "img.npy"))).replace(
        "TAB_PATH", repr(str(tmp_path / "tab.npy")))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    new, grown, data = map(int, out.stdout.split("GROWTH")[1].split())
    # The memmaps' pages count in RSS once read (file pages, not a copy); a
    # float32 copy of the images alone would add 4x their bytes.
    copy = n * (32 * 32 * 3 + 16) * 4
    assert grown <= new + data, f"grew {grown} bytes: plan {new} + data file pages {data}; a packed copy is {copy}"
