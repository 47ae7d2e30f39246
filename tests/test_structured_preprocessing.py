"""Keras 3's structured-data preprocessing layers (layers/lookup.py,
hashing.py, categorical.py: host-side, NumPy) against Keras 3 itself, live
(its lookups and hashes run on TensorFlow, which the reference needs and
boundfit does not): StringLookup / IntegerLookup for every output mode, mask,
OOV buckets (floormod, FarmHash, SipHash), padding, adapt and invert;
Hashing and HashedCrossing bin for bin; CategoryEncoding and Discretization
(boundaries given and adapted); configs both ways; .keras files both ways
(the adapted vocabulary as Keras's asset); a tabular model on string, integer
and float Inputs trains as Keras's on the same encoded features; tf.data
maps; each bad argument raises naming it."""

import json
import os
import tempfile
import zlib

import numpy as np
import pytest

import boundfit as bf
import keras_ref
from boundfit import layers as L
from helpers.keras_recorded import case
from boundfit.layers.layer import _counters


@pytest.fixture(autouse=True)
def _names_from_zero():
    """layers named from 0 in each test (as after Keras's clear_session): boundfit's files, whose contents key
    Keras's recorded results, do not depend on the tests run before in the process (pytest-xdist)"""
    _counters.clear()


RNG = np.random.RandomState(0)
WORDS = np.array(["a", "b", "c", "d", "zz", "é", ""])
STRINGS = {"1d": RNG.choice(WORDS, 7), "col": RNG.choice(WORDS, (5, 1)), "2d": RNG.choice(WORDS, (4, 3)),
           "scalar": "b", "list": ["a", "q", "é"], "bytes": np.array([b"a", "\xc3\xa9".encode("latin-1"), b"x"],
                                                                    dtype=object)}
INTS = RNG.randint(-3, 12, (6, 2))
VOCAB = ["a", "b", "c", "é"]


@pytest.fixture(autouse=True)
def _own_data(request):
    """each test draws its data from its own seed: Keras's results are recorded per test, whichever ran before"""
    RNG.seed(zlib.crc32(request.node.nodeid.encode()))


def _keras():
    pytest.importorskip("tensorflow", reason="Keras 3's lookup and hashing layers run on TensorFlow")
    return keras_ref.load()


def _same(k_out, b_out):
    k, b = np.asarray(k_out), np.asarray(b_out)
    assert (k.dtype, k.shape) == (b.dtype, b.shape)
    np.testing.assert_array_equal(b, k)


def _same_calls(cls, calls):
    """layers.cls(**kw) on each x of xs, for each (kw, xs) of calls, as Keras's (its outputs recorded)"""
    def compute():
        keras = _keras()
        return [[np.asarray(layer(x)) for x in xs] for layer, xs in
                ((getattr(keras.layers, cls)(**kw), xs) for kw, xs in calls)]
    for (kw, xs), outs in zip(calls, case(compute)):
        bl = getattr(L, cls)(**kw)
        for x, k in zip(xs, outs):
            _same(k, bl(x))


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count", "tf_idf"])
def test_string_lookup_equals_keras_for_each_mode_mask_oov_and_padding(mode):
    calls = []
    for mask in (None, ""):
        for oov in (0, 1, 3):
            for pad in ((False, True) if oov == 1 else (False,)):
                kw = dict(vocabulary=VOCAB, output_mode=mode, mask_token=mask, num_oov_indices=oov)
                if mode == "tf_idf":
                    kw["idf_weights"] = [0.5, 1.0, 2.0, 3.0]
                if pad:
                    kw.update(max_tokens=10, pad_to_max_tokens=True)
                xs = []
                for name, x in STRINGS.items():
                    if oov == 0 and name == "bytes":
                        continue
                    if oov == 0:   # every value in the vocabulary (or the mask)
                        known = VOCAB + ([""] if mask == "" else [])
                        x = np.where(np.isin(np.asarray(x, dtype=str), known), np.asarray(x, dtype=str), "a")
                    xs.append(x)
                calls.append((kw, xs))
    _same_calls("StringLookup", calls)
    bl = L.StringLookup(vocabulary=VOCAB, num_oov_indices=0)
    with pytest.raises(bf.DataError, match="num_oov_indices=0.*'q'"):
        bl(np.array(["a", "q"]))


def test_string_lookup_oov_buckets_hash_as_keras_with_and_without_salt():
    long = np.array(["x" * n for n in (1, 5, 9, 17, 33, 65, 200)] + ["é" * 40])
    _same_calls("StringLookup", [(dict(vocabulary=["a"], num_oov_indices=5, salt=salt), [long])
                                 for salt in (None, 77, (3, 5))])


def _adapted(cls, kws, data, batches=None, vocabulary=True):
    """Keras's cls(**kw) for each kw of kws adapted to data (then to the batches), recorded: (its vocabulary or
    bin boundaries, its output on data) after each adapt"""
    def compute():
        keras, out = _keras(), []
        for kw in kws:
            for source in ((data, None) if batches is None else (data, batches)):
                if source is None:
                    continue
                kl = getattr(keras.layers, cls)(**kw)
                kl.adapt(source if source is data else iter(source))
                out.append((kl.get_vocabulary() if vocabulary else kl.bin_boundaries, np.asarray(kl(data))))
        return out
    return case(compute)


@pytest.mark.parametrize("mode", ["int", "multi_hot", "count", "tf_idf"])
def test_string_lookup_adapt_equals_keras_on_arrays_and_batches(mode):
    data = RNG.choice(WORDS, (20, 2))
    batches = [data[i:i + 6, 0] for i in range(0, 20, 6)]   # 1-D batches: one document each, as Keras
    kws = [dict(output_mode=mode, max_tokens=max_tokens, mask_token="", pad_to_max_tokens=pad)
           for max_tokens in (None, 3) for pad in ((False, True) if max_tokens else (False,))]
    theirs = iter(_adapted("StringLookup", kws, data, batches))
    for kw in kws:
        for source in (data, iter(batches)):
            bl = L.StringLookup(**kw)
            bl.adapt(source)
            vocabulary, out = next(theirs)
            assert bl.get_vocabulary() == vocabulary
            _same(out, bl(data))


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
def test_integer_lookup_equals_keras_with_floormod_farmhash_salt_and_mask(mode):
    xs = [INTS, INTS[:, :1], INTS[:, 0], [5, 9, 3], 7]
    _same_calls("IntegerLookup", [(dict(vocabulary=[5, 7, 9, 11], output_mode=mode, num_oov_indices=oov,
                                        oov_method=method, mask_token=mask), xs)
                                  for oov in (1, 3) for method in ("floormod", "farmhash") for mask in (None, 0)] +
                [(dict(vocabulary=[5, 7], num_oov_indices=4, oov_method="farmhash", salt=[3, 4]), [INTS])])
    bl = L.IntegerLookup(mask_token=0, max_tokens=5)
    data = RNG.randint(-2, 6, 30)
    bl.adapt(data)
    (vocabulary, out), = _adapted("IntegerLookup", [dict(mask_token=0, max_tokens=5)], data)
    assert bl.get_vocabulary() == [int(v) for v in vocabulary]
    _same(out, bl(data))


def test_invert_maps_ids_back_to_terms_as_keras():
    ids = np.array([[0], [1], [2], [3], [9]])
    _same_calls("IntegerLookup", [(dict(vocabulary=[5, 7], invert=True, mask_token=0), [ids])])
    bl = L.StringLookup(vocabulary=["a", "b"], invert=True, mask_token="")

    def compute():   # Keras on JAX cannot return strings eagerly; on a TensorFlow tensor it does
        import tensorflow as tf
        kl = _keras().layers.StringLookup(vocabulary=["a", "b"], invert=True, mask_token="")
        return [v.decode() for v in kl(tf.constant(ids)).numpy().ravel()]
    got = bl(ids)
    assert got.dtype == object and got.shape == (5, 1)
    assert got.ravel().tolist() == case(compute)
    fwd = L.StringLookup(vocabulary=["a", "b"], mask_token="")
    assert bl(fwd(np.array(["b", "a", ""]))).tolist() == ["b", "a", ""]


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
def test_hashing_equals_keras_on_strings_integers_and_floats(mode):
    calls = []
    for mask in (None, ""):
        for salt in (None, 9, (1, 2)):
            xs = [x for name, x in STRINGS.items()
                  if not (mode == "one_hot" and name == "scalar")]   # Keras's one_hot of one string fails
            if mask is None:
                xs += [INTS, np.array([[-1.7], [2.9], [13.2]])]   # floats truncated toward zero, as tf.cast
            calls.append((dict(num_bins=7, output_mode=mode, mask_value=mask, salt=salt), xs))
    _same_calls("Hashing", calls + [(dict(num_bins=5, mask_value=3), [INTS])])


@pytest.mark.parametrize("mode", ["int", "one_hot"])
def test_hashed_crossing_equals_keras(mode):
    _same_calls("HashedCrossing", [(dict(num_bins=11, output_mode=mode), [
        (STRINGS["1d"][:5], INTS[:5, 0]), (STRINGS["col"], INTS[:5, :1], STRINGS["col"]), ("x", 4),
        (INTS[:, 0], -INTS[:, 1])])])


@pytest.mark.parametrize("mode", ["one_hot", "multi_hot", "count"])
def test_category_encoding_equals_keras(mode):
    _same_calls("CategoryEncoding", [(dict(num_tokens=6, output_mode=mode), [
        np.array([0, 3, 5]), np.array([[1], [4]]), np.array([[0, 2, 2], [5, 5, 1]]), 3, [1, 2],
        np.array([[7, -1, 2]])])])
    if mode == "count":
        x, w = np.array([[0, 2, 2], [5, 5, 1]]), np.array([[0.5, 1, 2], [1, 1, 3.0]])
        want = case(lambda: np.asarray(_keras().layers.CategoryEncoding(num_tokens=6, output_mode=mode)(
            x, count_weights=w)))
        _same(want, L.CategoryEncoding(num_tokens=6, output_mode=mode)(x, count_weights=w))


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
def test_discretization_equals_keras_given_and_adapted(mode):
    _same_calls("Discretization", [(dict(bin_boundaries=[-1.0, 0.0, 0.5, 2.0], output_mode=mode), [
        RNG.randn(6), RNG.randn(4, 1), RNG.randn(3, 4), np.array([[0.5, -1.0, 2.0]]), 0.3])])
    for bins, eps, n in ((4, 0.01, 1000), (5, 0.05, 37), (10, 0.01, 123)):
        data = RNG.randn(n) * 3
        batches = [data[i:i + 100] for i in range(0, n, 100)]
        kw = dict(num_bins=bins, epsilon=eps, output_mode=mode)

        def compute():   # one layer adapted to the data, then again to its batches
            kl = _keras().layers.Discretization(**kw)
            kl.adapt(data)
            first = kl.bin_boundaries
            kl.adapt(batches)
            return first, kl.bin_boundaries, np.asarray(kl(data[:9]))
        first, again, out = case(compute)
        bl = L.Discretization(**kw)
        bl.adapt(data)
        assert bl.bin_boundaries == first
        bl.adapt(batches)
        assert bl.bin_boundaries == again
        _same(out, bl(data[:9]))


def _layers_for_configs():
    sl = L.StringLookup(max_tokens=6, mask_token="", output_mode="multi_hot", num_oov_indices=2)
    sl.adapt(RNG.choice(WORDS, 30))
    d = L.Discretization(num_bins=3, output_mode="one_hot")
    d.adapt(RNG.randn(50))
    return [L.StringLookup(vocabulary=VOCAB, output_mode="count", salt=5), sl,
            L.StringLookup(vocabulary=VOCAB, output_mode="tf_idf", idf_weights=[1, 2, 3, 4.0]),
            L.IntegerLookup(vocabulary=[3, 1], oov_method="farmhash", num_oov_indices=2, mask_token=0),
            L.Hashing(num_bins=9, salt=[2, 3], mask_value="", output_mode="multi_hot"), L.Hashing(num_bins=4),
            L.HashedCrossing(num_bins=5, output_mode="one_hot"), L.CategoryEncoding(4, output_mode="count"),
            L.Discretization(bin_boundaries=[0.0, 1.5]), d]


def test_configs_round_trip_through_keras_both_ways(tmp_path):
    ours = _layers_for_configs()
    xs = []
    for bl in ours:
        if isinstance(bl, L.HashedCrossing):
            x = (STRINGS["1d"], STRINGS["1d"])
        elif isinstance(bl, L.Discretization):
            x = RNG.randn(5, 1)
        elif isinstance(bl, L.CategoryEncoding):
            x = np.array([[0, 3, 3]])
        elif isinstance(bl, L.IntegerLookup):
            x = INTS
        else:
            x = STRINGS["2d"]
        xs.append(x)
    cfgs = [bl.get_config() for bl in ours]
    (tmp_path / "configs.json").write_text(json.dumps(cfgs, default=repr))   # Keras's side recorded by them

    def compute():   # Keras reads boundfit's configs: its own configs and outputs
        keras, out = _keras(), []
        for bl, cfg, x in zip(ours, cfgs, xs):
            kl = getattr(keras.layers, type(bl).__name__).from_config(cfg)
            keeps = getattr(bl, "input_vocabulary", 1) is not None   # Keras's config holds what it computes with
            out.append((kl.get_config(), np.asarray(kl(x)) if keeps else None))
        return out
    for bl, cfg, x, (kcfg, kout) in zip(ours, cfgs, xs, case(compute, files=[tmp_path / "configs.json"])):
        back = type(bl).from_config(kcfg)                     # and boundfit reads Keras's
        assert back.get_config() == cfg
        if kout is not None:
            _same(kout, bl(x))
        _same(bl(x), back(x)) if not isinstance(bl, L.StringLookup) or bl.input_vocabulary is not None else None


def _tabular(n=64, seed=1):
    r = np.random.RandomState(seed)
    city = r.choice(["paris", "rome", "oslo", "lima", "kyiv"], (n, 1))
    rooms = r.randint(1, 7, (n, 1))
    area = (r.rand(n, 1) * 150).astype(np.float32)
    floor = r.randint(0, 4, (n, 1))
    zipc = r.choice(["z%d" % k for k in range(12)], (n, 1))
    y = ((city[:, 0] == "oslo") | (rooms[:, 0] > 4) | (area[:, 0] > 100)).astype(np.float32).reshape(-1, 1)
    return [city, rooms, area, floor, zipc, area], y


def _tabular_model(data):
    """keras.io's structured-data pattern: one Input per feature and its encoding on it (each a host stage),
    then Dense layers on their concatenation."""
    ins = [bf.Input((1,), dtype="string", name="city"), bf.Input((1,), dtype="int64", name="rooms"),
           bf.Input((1,), name="area"), bf.Input((1,), dtype="int32", name="floor"),
           bf.Input((1,), dtype="string", name="zip"), bf.Input((1,), name="area_raw")]
    enc = [L.StringLookup(output_mode="one_hot"), L.IntegerLookup(output_mode="multi_hot"),
           L.Discretization(num_bins=4, output_mode="one_hot"), L.CategoryEncoding(4, output_mode="one_hot"),
           L.Hashing(num_bins=5, output_mode="one_hot"), L.Rescaling(1 / 150)]
    for layer, d in zip(enc[:3], data):
        layer.adapt(d)
    x = L.Concatenate()([e(i) for e, i in zip(enc, ins)])
    out = L.Dense(1, activation="sigmoid")(L.Dense(8, activation="relu")(x))
    return bf.Model(ins, out), enc


def test_tabular_model_on_raw_features_trains_as_keras_on_the_encoded_ones(tmp_path):
    data, y = _tabular()
    m, enc = _tabular_model(data)
    w0 = m.get_weights()
    np.savez(tmp_path / "w0.npz", *w0)   # Keras's side recorded by boundfit's initial weights

    def compute():
        keras = _keras()
        kenc = [keras.layers.StringLookup(output_mode="one_hot"),
                keras.layers.IntegerLookup(output_mode="multi_hot"),
                keras.layers.Discretization(num_bins=4, output_mode="one_hot"),
                keras.layers.CategoryEncoding(4, output_mode="one_hot"),
                keras.layers.Hashing(num_bins=5, output_mode="one_hot"), keras.layers.Rescaling(1 / 150)]
        for layer, d in zip(kenc[:3], data):
            layer.adapt(d)
        outs = [np.asarray(k(d)) for k, d in zip(kenc, data)]
        feats = [np.asarray(o, np.float32) for o in outs]
        kin = [keras.Input((f.shape[1],)) for f in feats]
        kx = keras.layers.Concatenate()(kin)
        km = keras.Model(kin, keras.layers.Dense(1, activation="sigmoid")(
            keras.layers.Dense(8, activation="relu")(kx)))
        km.set_weights(w0)
        km.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy")
        kh = km.fit(feats, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return dict(outs=outs[:5], loss=kh.history["loss"], w1=km.get_weights(), p=km.predict(feats, verbose=0))
    k = case(compute, files=[tmp_path / "w0.npz"])
    for b, out, d in zip(enc[:5], k["outs"], data):
        _same(out, b(d))
    m.compile(optimizer=bf.optimizers.SGD(0.1), loss="binary_crossentropy")
    plan = m.estimate_memory(batch_size=16)
    assert any(enc[0].name in e.name and "on the host" in e.name for e in plan.breakdown)
    h = m.fit(data, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], k["loss"], rtol=2e-5, atol=1e-6)
    for a, b in zip(m.get_weights(), k["w1"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(m.predict(data, verbose=0), k["p"], rtol=1e-5, atol=1e-6)


def test_keras_files_hold_the_adapted_vocabulary_and_open_both_ways(tmp_path):
    import zipfile
    data, y = _tabular(40, seed=2)
    m, enc = _tabular_model(data)
    m.compile(optimizer="adam", loss="binary_crossentropy")
    want = m.predict(data, verbose=0)
    m.save(tmp_path / "m.keras")
    names = zipfile.ZipFile(tmp_path / "m.keras").namelist()
    assert sum(n.endswith("vocabulary.txt") for n in names) == 2   # the two adapted lookups' assets
    back = bf.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(back.predict(data, verbose=0), want, rtol=1e-6)

    def opened():   # Keras's side, recorded by the file's contents: what it read, and the file it saves
        km = _keras().models.load_model(tmp_path / "m.keras")
        got = [km.get_layer(enc[0].name).get_vocabulary(), [int(v) for v in km.get_layer(enc[1].name).get_vocabulary()],
               km.get_layer(enc[2].name).bin_boundaries]
        with tempfile.TemporaryDirectory() as d:
            km.save(os.path.join(d, "k.keras"))
            return got, np.frombuffer(open(os.path.join(d, "k.keras"), "rb").read(), np.uint8)
    (vocabulary, ints, bins), file = case(opened, files=[tmp_path / "m.keras"])
    assert vocabulary == enc[0].get_vocabulary()
    assert ints == enc[1].get_vocabulary()
    assert bins == enc[2].bin_boundaries
    (tmp_path / "k.keras").write_bytes(file.tobytes())
    again = bf.models.load_model(tmp_path / "k.keras")
    assert again.get_layer(enc[0].name).get_vocabulary() == enc[0].get_vocabulary()
    np.testing.assert_allclose(again.predict(data, verbose=0), want, rtol=1e-6)


def test_layers_map_tf_data_pipelines_as_keras():
    """boundfit's layers in tf.data maps (TensorFlow live), Keras's the same (recorded)"""
    tf = pytest.importorskip("tensorflow")
    (city, *_), y = _tabular(20)
    made = [("StringLookup", dict(vocabulary=["rome", "oslo"], output_mode="one_hot")),
            ("Hashing", dict(num_bins=6)), ("StringLookup", dict(vocabulary=["rome"]))]

    def mapped(M):
        ds = tf.data.Dataset.from_tensor_slices((city, y)).batch(8)
        return [[b.numpy() for b, _ in ds.map(lambda x, t, l=getattr(M.layers, cls)(**kw): (l(x), t))]
                for cls, kw in made]

    def adapted(M):
        sl = M.layers.StringLookup()
        sl.adapt(tf.data.Dataset.from_tensor_slices(city).batch(8))
        return sl.get_vocabulary()
    want, vocabulary = case(lambda: (mapped(_keras()), adapted(_keras())))
    for got, theirs in zip(mapped(bf), want):
        for g, w in zip(got, theirs):
            np.testing.assert_array_equal(g, w)
    assert adapted(bf) == vocabulary


@pytest.mark.parametrize("make, match", [
    (lambda: L.StringLookup(max_tokens=1), "max_tokens"),
    (lambda: L.StringLookup(pad_to_max_tokens=True), "pad_to_max_tokens"),
    (lambda: L.StringLookup(num_oov_indices=-1), "num_oov_indices"),
    (lambda: L.StringLookup(output_mode="binaryish"), "output_mode"),
    (lambda: L.StringLookup(invert=True, output_mode="one_hot"), "invert"),
    (lambda: L.StringLookup(sparse=True, output_mode="count"), "sparse"),
    (lambda: L.StringLookup(idf_weights=[1.0]), "idf_weights"),
    (lambda: L.StringLookup(vocabulary=["a"], output_mode="tf_idf"), "idf_weights"),
    (lambda: L.StringLookup(vocabulary=["a", "a"]), "repeated"),
    (lambda: L.StringLookup(vocabulary=["a", ""], mask_token=""), "mask_token"),
    (lambda: L.StringLookup(vocabulary=["a", "b"], max_tokens=2), "max_tokens"),
    (lambda: L.StringLookup(salt="x"), "salt"),
    (lambda: L.IntegerLookup(salt=3), "salt"),
    (lambda: L.IntegerLookup(oov_method="md5"), "oov_method"),
    (lambda: L.IntegerLookup(vocabulary_dtype="int32"), "vocabulary_dtype"),
    (lambda: L.IntegerLookup(vocabulary=["a"]), "vocabulary"),
    (lambda: L.Hashing(num_bins=0), "num_bins"),
    (lambda: L.Hashing(num_bins=3, salt=1.5), "salt"),
    (lambda: L.Hashing(num_bins=3, output_mode="tf_idf"), "output_mode"),
    (lambda: L.HashedCrossing(num_bins=3, output_mode="count"), "output_mode"),
    (lambda: L.HashedCrossing(num_bins=3, sparse=True), "sparse"),
    (lambda: L.CategoryEncoding(), "num_tokens"),
    (lambda: L.CategoryEncoding(num_tokens=0), "num_tokens"),
    (lambda: L.CategoryEncoding(3, output_mode="int"), "output_mode"),
    (lambda: L.Discretization(), "num_bins"),
    (lambda: L.Discretization(bin_boundaries=[1.0], num_bins=3), "num_bins"),
    (lambda: L.Discretization(num_bins=3, epsilon=0), "epsilon"),
    (lambda: L.Discretization(bin_boundaries=[0.0]).adapt(np.ones(3)), "bin_boundaries"),
    (lambda: L.StringLookup(vocabulary=["a"]).adapt(["a"]), "vocabulary"),
    (lambda: L.StringLookup(output_mode="count")(["a"]), "vocabulary"),
    (lambda: L.CategoryEncoding(3)(np.array([[1]]), count_weights=np.ones((1, 1))), "count_weights"),
    (lambda: L.HashedCrossing(num_bins=3)(np.array(["a"])), "list or tuple"),
    (lambda: L.StringLookup(vocabulary=["a"])(np.array([1, 2])), "strings"),
    (lambda: bf.utils.FeatureSpace(features={}), "FeatureSpace"),
])
def test_bad_arguments_raise_naming_the_argument(make, match):
    with pytest.raises((ValueError, NotImplementedError, RuntimeError), match=match):
        make()


def test_model_stages_refuse_what_they_cannot_run_by_name():
    x = bf.Input((1,), dtype="string")
    with pytest.raises(ValueError, match="HashedCrossing"):
        L.HashedCrossing(num_bins=3)([x, x])
    with pytest.raises(ValueError, match="keras.Input"):
        L.CategoryEncoding(3)(L.Dense(2)(bf.Input((2,))))
    with pytest.raises(ValueError, match="takes numbers"):
        L.IntegerLookup(vocabulary=[1])(x)
    with pytest.raises(ValueError, match="invert"):
        L.StringLookup(vocabulary=["a"], invert=True)(bf.Input((1,), dtype="int64"))
    with pytest.raises(ValueError, match=r"shape such as \(1,\)"):
        L.StringLookup(vocabulary=["a"], output_mode="multi_hot")(bf.Input((), dtype="string"))
    a = bf.Input((1,))
    with pytest.raises(ValueError, match="its own Input"):
        bf.Model(a, L.Concatenate()([L.Discretization(bin_boundaries=[0.0], output_mode="one_hot")(a), L.Dense(1)(a)]))
