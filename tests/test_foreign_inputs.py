"""fit / evaluate / predict from the other ecosystems' data: tf.data.Dataset
and torch DataLoader (each through a stand-in of its types, and the real one
too when TensorFlow / torch is installed), pandas DataFrame / Series, Parquet
and CSV files streamed (bf.data.from_parquet / from_csv) and Hugging Face
datasets (bf.data.from_hf).
Each trains with the same losses as the same arrays (same weights, same
batches, shuffle=False); validation data is read again every epoch; a batch
that does not match the first is refused naming it; the streamed files are
planned and never held whole."""

import contextlib
import os

import numpy as np
import pytest

import boundfit as bf
from boundfit.engine.adapters import tensors

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

N, F, C = 100, 4, 3
FEATURES = [f"f{i}" for i in range(F)]


def _data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, F)).astype("float32"), rng.integers(0, C, n)


def _model(lr=0.1):
    m = bf.Sequential([bf.layers.Dense(8, activation="relu", input_shape=(F,)),
                       bf.layers.Dense(C, activation="softmax")])
    m.compile(bf.optimizers.SGD(lr), "sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def _pair(lr=0.1):
    """Two models with the same weights: one for arrays, one for the source under test."""
    a, b = _model(lr), _model(lr)
    b.set_weights(a.get_weights())
    return a, b


def _same(h_ref, h):
    assert h.history.keys() == h_ref.history.keys()
    for k in h_ref.history:
        np.testing.assert_allclose(h.history[k], h_ref.history[k], rtol=1e-6, err_msg=k)


def _frame(x, y):
    df = pd.DataFrame(x, columns=FEATURES)
    df["label"] = y
    return df


# ---- tf.data ----

def _tree(v, f):
    if isinstance(v, dict):
        return {k: _tree(e, f) for k, e in v.items()}
    if isinstance(v, (tuple, list)):
        return type(v)(_tree(e, f) for e in v)
    return f(v)


class _FakeEagerTensor:
    """A stand-in of a CPU tf EagerTensor: what the adapter calls (np.asarray)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


_FakeEagerTensor.__module__ = "tensorflow.python.framework.ops"
_FakeEagerTensor.__name__ = _FakeEagerTensor.__qualname__ = "EagerTensor"


class _FakeRaggedTensor:
    pass


_FakeRaggedTensor.__module__ = "tensorflow.python.ops.ragged.ragged_tensor"
_FakeRaggedTensor.__name__ = _FakeRaggedTensor.__qualname__ = "RaggedTensor"


class _FakeTensorSpec:
    def __init__(self, rank):
        self.shape = type("TensorShape", (), {"rank": rank})()


class _FakeDataset:
    """A stand-in of a tf.data.Dataset (what the adapter reads: its type's names, element_spec, iteration)
    over a list of elements, each a structure of arrays yielded as tensors; every iteration starts over."""

    def __init__(self, elements, element_spec):
        self.elements, self.element_spec = elements, element_spec

    def __iter__(self):
        for el in self.elements:
            yield _tree(el, lambda a: a if isinstance(a, _FakeRaggedTensor) else _FakeEagerTensor(a))


_FakeDataset.__module__ = "tensorflow.python.data.ops.dataset_ops"
_FakeDataset.__name__ = _FakeDataset.__qualname__ = "DatasetV2"


def _fake_slices(parts, batch_size=None):
    """The stand-in of tf.data.Dataset.from_tensor_slices(parts)[.batch(batch_size)]."""
    leaves = []
    _tree(parts, leaves.append)
    n, step = len(leaves[0]), batch_size or 1
    cut = (lambda a, i: a[i:i + step]) if batch_size else (lambda a, i: a[i])
    elements = [_tree(parts, lambda a, i=i: cut(a, i)) for i in range(0, n, step)]
    return _FakeDataset(elements, _tree(parts, lambda a: _FakeTensorSpec(a.ndim - (not batch_size))))


def _slices():
    """Makers of from_tensor_slices(parts)[.batch(batch_size)]: the stand-in's, and tf.data's if TensorFlow is
    installed."""
    out = [_fake_slices]
    try:
        import tensorflow as tf
    except ImportError:
        return out

    def real(parts, batch_size=None):
        ds = tf.data.Dataset.from_tensor_slices(parts)
        return ds.batch(batch_size) if batch_size else ds
    out.append(real)
    return out


def _generators(gen):
    """Datasets of the elements gen() yields (x, y): the stand-in, and tf.data's from_generator if TensorFlow
    is installed."""
    elements = list(gen())
    out = [_FakeDataset(elements, (_FakeTensorSpec(2), _FakeTensorSpec(1)))]
    try:
        import tensorflow as tf
    except ImportError:
        return out
    out.append(tf.data.Dataset.from_generator(gen, output_signature=(tf.TensorSpec((None, None), tf.float32),
                                                                     tf.TensorSpec((None,), tf.int64))))
    return out


def test_tf_dataset_trains_and_validates_as_the_arrays():
    x, y = _data()
    vx, vy = _data(40, seed=1)
    for make in _slices():
        a, b = _pair()
        ref = a.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, validation_data=(vx, vy))
        ds = make((x, y), 16)
        vds = make((vx, vy), 16)
        _same(ref, b.fit(ds, epochs=3, verbose=0, validation_data=vds))
        np.testing.assert_allclose(b.predict(ds, verbose=0), a.predict(x, batch_size=16, verbose=0), rtol=1e-6)
        np.testing.assert_allclose(b.evaluate(vds, verbose=0), a.evaluate(vx, vy, batch_size=16, verbose=0),
                                   rtol=1e-6)


class _ReIterable:
    """A plain re-iterable of (x, y) batches (no __len__ / __getitem__): each iter() starts over."""

    def __init__(self, x, y, bs):
        self.x, self.y, self.bs = x, y, bs

    def __iter__(self):
        for i in range(0, len(self.x), self.bs):
            yield self.x[i:i + self.bs], self.y[i:i + self.bs]


def test_validation_re_reads_a_tf_dataset_and_any_re_iterable_every_epoch():
    x, y = _data()
    vx, vy = _data(40, seed=1)
    for val in [make((vx, vy), 16) for make in _slices()] + [_ReIterable(vx, vy, 16)]:
        m = _model(lr=0.0)   # frozen: every epoch's validation is the same
        h = m.fit(x, y, batch_size=16, epochs=3, verbose=0, validation_data=val)
        assert np.isfinite(h.history["val_loss"]).all(), h.history   # before: epoch 2 read nothing: nan, 0.0
        assert h.history["val_loss"] == [h.history["val_loss"][0]] * 3
        assert h.history["val_accuracy"] == [h.history["val_accuracy"][0]] * 3
        assert h.history["val_loss"][0] == pytest.approx(m.evaluate(vx, vy, batch_size=16, verbose=0)[0], rel=1e-6)


def test_validation_steps_start_a_tf_dataset_over_every_epoch():
    x, y = _data()
    vx, vy = _data(48, seed=1)
    for make in _slices():
        m = _model(lr=0.0)
        h = m.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_steps=1, validation_data=make((vx, vy), 16))
        first = m.evaluate(vx[:16], vy[:16], verbose=0)[0]
        assert h.history["val_loss"] == pytest.approx([first, first], rel=1e-6)   # batch 0 both times, as Keras


def test_tf_dataset_of_dict_inputs_and_sample_weights_trains_as_the_arrays():
    rng = np.random.default_rng(2)
    xa, xb = rng.normal(size=(64, 3)).astype("float32"), rng.normal(size=(64, 2)).astype("float32")
    y, sw = rng.normal(size=(64, 1)).astype("float32"), rng.uniform(0.5, 2, 64).astype("float32")

    def model():
        ia, ib = bf.Input((3,), name="a"), bf.Input((2,), name="b")
        out = bf.layers.Dense(1)(bf.layers.Concatenate()([ia, ib]))
        m = bf.Model([ia, ib], out)
        m.compile(bf.optimizers.SGD(0.05), "mse")
        return m
    for make in _slices():
        m1, m2 = model(), model()
        m2.set_weights(m1.get_weights())
        ref = m1.fit({"a": xa, "b": xb}, y, sample_weight=sw, batch_size=16, epochs=2, shuffle=False, verbose=0)
        _same(ref, m2.fit(make(({"a": xa, "b": xb}, y, sw), 16), epochs=2, verbose=0))


def test_tf_dataset_batch_of_another_shape_is_refused_naming_it():
    def gen():
        yield np.zeros((8, F), np.float32), np.zeros(8, np.int64)
        yield np.zeros((8, F + 1), np.float32), np.zeros(8, np.int64)
    for ds in _generators(gen):
        with pytest.raises(bf.DataError,
                           match=r"batch 1: x has per-sample shape \(5,\).*first batch had \(4,\)") as e:
            _model().fit(ds, epochs=1, verbose=0)
        assert e.value.batch_index == 1


def test_unbatched_tf_dataset_is_refused_before_a_step():
    x, y = _data(20)
    for make in _slices():
        m = _model()
        w = m.get_weights()
        with pytest.raises(bf.DataError,
                           match=r"tf.data.Dataset's elements hold scalars .*call .batch\(batch_size\)"):
            m.fit(make((x, y)), verbose=0)
        assert all((a == b).all() for a, b in zip(m.get_weights(), w))


def test_ragged_tensor_is_refused_naming_it():
    sets = [_FakeDataset([(_FakeRaggedTensor(), np.array([0, 1]))], (_FakeTensorSpec(2), _FakeTensorSpec(1)))]
    try:
        import tensorflow as tf
        sets.append(tf.data.Dataset.from_tensors((tf.ragged.constant([[1.0, 2.0], [3.0]]), tf.constant([0, 1]))))
    except ImportError:
        pass
    for ds in sets:
        with pytest.raises(bf.DataError, match=r"tf.data.Dataset batch 0 x: a RaggedTensor is not supported"):
            _model().fit(ds, verbose=0)


# ---- torch DataLoader ----

class _FakeTensor:
    """A stand-in of a CPU torch.Tensor: what the adapter calls (detach, cpu, numpy)."""
    __module__ = "torch"
    layout = "torch.strided"

    def __init__(self, a):
        self.a = a

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.a   # shares the memory, as torch's does


class _FakeDataLoader:
    """A stand-in of torch.utils.data.DataLoader over arrays (default collate: a list [x, y] per batch)."""

    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size = x, y, batch_size

    def __iter__(self):
        for i in range(0, len(self.x), self.batch_size):
            yield [_FakeTensor(self.x[i:i + self.batch_size]), _FakeTensor(self.y[i:i + self.batch_size])]

    def __len__(self):
        return -(-len(self.x) // self.batch_size)


_FakeDataLoader.__module__ = "torch.utils.data.dataloader"
_FakeDataLoader.__name__ = _FakeDataLoader.__qualname__ = "DataLoader"


def _loaders(x, y, vx, vy):
    """(a real DataLoader's maker if torch is installed, the stand-in's)."""
    out = [lambda a, b: _FakeDataLoader(a, b, 16)]
    try:
        import torch
    except ImportError:
        return out
    out.append(lambda a, b: torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(a), torch.from_numpy(b)), batch_size=16))
    return out


def test_dataloader_trains_and_validates_as_the_arrays():
    x, y = _data()
    vx, vy = _data(40, seed=1)
    for make in _loaders(x, y, vx, vy):
        a, b = _pair()
        ref = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(vx, vy))
        _same(ref, b.fit(make(x, y), epochs=2, verbose=0, validation_data=make(vx, vy)))
        np.testing.assert_allclose(b.predict(make(vx, vy), verbose=0), a.predict(vx, verbose=0), rtol=1e-6)


def test_torch_tensors_become_arrays_without_a_copy():
    x, _ = _data(32)
    ts = [_FakeTensor(x)]
    try:
        import torch
        ts.append(torch.from_numpy(x).requires_grad_(False))
    except ImportError:
        pass
    for t in ts:
        assert np.shares_memory(tensors.to_numpy(t, "x"), x)


def test_dataloader_element_of_four_parts_is_refused():
    with pytest.raises(bf.DataError, match=r"torch DataLoader batch 0: an element must be .* this one has 4 parts"):
        tensors.element([1, 2, 3, 4], "torch DataLoader batch 0")


# ---- pandas ----

def test_dataframe_and_series_train_as_the_arrays():
    x, y = _data()
    df = _frame(x, y)
    a, b = _pair()
    ref = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(x[:40], y[:40]))
    h = b.fit(df[FEATURES], df["label"], batch_size=16, epochs=2, shuffle=False, verbose=0,
              validation_data=(df[FEATURES].iloc[:40], df["label"].iloc[:40]))
    _same(ref, h)   # before: KeyError: 0 (the frame taken for a Sequence)
    np.testing.assert_allclose(b.predict(df[FEATURES], verbose=0), a.predict(x, verbose=0), rtol=1e-6)
    assert np.shares_memory(bf.engine.adapters.adapt(df[FEATURES], "x"), df[FEATURES].to_numpy())


def test_dataframe_trains_as_keras_3_does():
    """Keras 3 takes a DataFrame as its to_numpy() and a Series as a column (N, 1); mixed int / float columns
    go to float32 (floatx)."""
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    x, y = _data(64)
    df = pd.DataFrame({"f0": x[:, 0].astype("float64"), "f1": (x[:, 1] * 10).astype("int64"),
                       "f2": x[:, 2], "f3": x[:, 3]})
    yv = pd.Series(x.sum(axis=1).astype("float32"))
    k = keras.Sequential([keras.Input((F,)), keras.layers.Dense(1)])
    k.compile(keras.optimizers.SGD(0.01), "mse")
    m = bf.Sequential([bf.layers.Dense(1, input_shape=(F,))])
    m.compile(bf.optimizers.SGD(0.01), "mse")
    m.set_weights(k.get_weights())
    kh = k.fit(df, yv, batch_size=16, epochs=2, shuffle=False, verbose=0)
    h = m.fit(df, yv, batch_size=16, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h.history["loss"], kh.history["loss"], rtol=1e-4)


def test_dataframe_column_of_text_is_refused_naming_it():
    x, y = _data(20)
    df = pd.DataFrame(x, columns=FEATURES)
    df["f3"] = ["a"] * 20
    with pytest.raises(bf.DataError, match=r"x: column 'f3' has dtype .*, not numbers"):
        _model().fit(df, y, verbose=0)
    df = pd.DataFrame(x, columns=FEATURES).astype({"f2": "Float32"})
    df.loc[3, "f2"] = None
    with pytest.raises(bf.DataError, match=r"x: column 'f2' \(Float32\) has 1 missing values"):
        _model().fit(df, y, verbose=0)


# ---- Parquet / CSV ----

def _parquet(tmp_path, x, y, rows_per_group, name="t.parquet"):
    path = str(tmp_path / name)
    pq.write_table(pa.Table.from_pandas(_frame(x, y), preserve_index=False), path, row_group_size=rows_per_group)
    return path


def test_parquet_streams_as_the_arrays_across_row_groups(tmp_path):
    x, y = _data()
    vx, vy = _data(40, seed=1)
    path = _parquet(tmp_path, x, y, 24)          # batches of 16 straddle the groups of 24
    vpath = _parquet(tmp_path, vx, vy, 7, "v.parquet")
    a, b = _pair()
    ref = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(vx, vy))
    src = bf.data.from_parquet(path, x=FEATURES, y="label", batch_size=16)
    assert len(src) == 7
    h = b.fit(src, epochs=2, verbose=0, validation_data=bf.data.from_parquet(vpath, x=FEATURES, y="label",
                                                                              batch_size=16))
    _same(ref, h)
    np.testing.assert_allclose(b.predict(bf.data.from_parquet(path, x=FEATURES, batch_size=16), verbose=0),
                               a.predict(x, verbose=0), rtol=1e-6)


def test_parquet_shuffle_reads_every_row_once_in_a_new_order_each_epoch(tmp_path):
    x, y = _data()
    path = _parquet(tmp_path, x, np.arange(N), 24)
    src = bf.data.from_parquet(path, x=FEATURES, y="label", batch_size=16, shuffle=True, seed=3)
    epochs = [np.concatenate([b[1] for b in src]) for _ in range(2)]
    for e in epochs:
        assert sorted(e) == list(range(N))
    assert list(epochs[0]) != list(epochs[1])
    for e in epochs:   # rows shuffled within their row group only: each group's rows stay together
        groups = [set(e[i:i + 24] // 24) for i in range(0, N, 16)]
        assert all(len(g) <= 2 for g in groups)


_POOLS = []   # Arrow buffers allocated through a pool may outlive the test: the pool must too


@contextlib.contextmanager
def _arrow_pool():
    """Arrow's allocations counted apart while the block runs (pool.max_memory(): their peak)."""
    before = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(before)
    _POOLS.append(pool)
    pa.set_memory_pool(pool)
    try:
        yield pool
    finally:
        pa.set_memory_pool(before)


def test_parquet_is_streamed_within_its_plan(tmp_path):
    """The plan holds the largest row group's read and the batches; the file's rows are never all held:
    Arrow's peak for the whole fit is one row group's, far below the file's decoded size."""
    rng = np.random.default_rng(0)
    n, k, group = 8 * 2048, 16, 2048
    cols = {f"f{i}": rng.normal(size=n).astype("float32") for i in range(k)}
    cols["label"] = rng.integers(0, C, n)
    path = str(tmp_path / "big.parquet")
    pq.write_table(pa.table(cols), path, row_group_size=group)
    decoded = sum(a.nbytes for a in cols.values())
    m = bf.Sequential([bf.layers.Dense(C, activation="softmax", input_shape=(k,))])
    m.compile("sgd", "sparse_categorical_crossentropy")
    with _arrow_pool() as pool:
        src = bf.data.from_parquet(path, x=[f"f{i}" for i in range(k)], y="label", batch_size=256, shuffle=True)
        m.fit(src, epochs=2, verbose=0)
    entries = {e.name: e.bytes for e in m._last_plan.breakdown if e.category == "data"}
    group_entry = next(v for n_, v in entries.items() if "one row group read and decoded" in n_)
    assert any("batches of 256 rows" in n_ for n_ in entries)
    assert 0 < pool.max_memory() <= group_entry
    assert pool.max_memory() < decoded / 4   # 8 row groups: never more than about one held
    assert group_entry < decoded / 2


def test_parquet_missing_column_and_list_column_of_another_length_are_refused(tmp_path):
    x, y = _data(20)
    path = _parquet(tmp_path, x, y, 10)
    with pytest.raises(bf.DataError, match=r"t.parquet: no column 'nope'; its columns are \['f0', 'f1'"):
        bf.data.from_parquet(path, x=["f0", "nope"], y="label")
    with pytest.raises(ValueError, match=r"x: a column name, a list of names or a dict .*got 3"):
        bf.data.from_parquet(path, x=3, y="label")
    with pytest.raises(ValueError, match=r"batch_size must be a positive int, got 0"):
        bf.data.from_parquet(path, x=FEATURES, y="label", batch_size=0)
    with pytest.raises(bf.DataError, match=r"nothing.parquet: not a readable Parquet file"):
        bf.data.from_parquet(str(tmp_path / "nothing.parquet"), x=FEATURES)
    seqs = [[1.0, 2.0, 3.0, 4.0]] * 8 + [[1.0, 2.0, 3.0]] * 8
    lpath = str(tmp_path / "lists.parquet")
    pq.write_table(pa.table({"v": seqs, "label": [0] * 16}), lpath, row_group_size=8)
    src = bf.data.from_parquet(lpath, x="v", y="label", batch_size=8)
    with pytest.raises(bf.DataError, match=r"batch 1: x has per-sample shape \(3,\).*first batch had \(4,\)") as e:
        _model().fit(src, verbose=0)
    assert e.value.batch_index == 1
    src = bf.data.from_parquet(lpath, x="v", y="label", batch_size=16)
    with pytest.raises(bf.DataError, match=r"batch 0: column 'v' holds lists of different lengths \(3 to 4\)"):
        _model().fit(src, verbose=0)


def test_csv_streams_as_the_arrays_block_by_block(tmp_path):
    x, y = _data()
    path = str(tmp_path / "t.csv")
    _frame(x, y).to_csv(path, index=False, float_format="%.9g")   # float32 round-trips through 9 digits
    a, b = _pair()
    ref = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(x[:48], y[:48]))
    src = bf.data.from_csv(path, x=FEATURES, y="label", batch_size=16, block_size=512)   # many blocks
    val = bf.data.from_csv(path, x=FEATURES, y="label", batch_size=16, block_size=512)
    h = b.fit(src, epochs=2, verbose=0, validation_data=val, validation_steps=3)
    _same(ref, h)
    assert any("one block of 512 bytes" in e.name for e in b._last_plan.breakdown)


def test_csv_is_streamed_within_its_plan(tmp_path):
    """One block is parsed at a time: Arrow's peak is a few blocks' worth, within the plan's entry, far below
    the file (pyarrow's own streaming reader would read some thirty blocks ahead)."""
    rng = np.random.default_rng(0)
    n, k = 40000, 8
    df = pd.DataFrame(rng.normal(size=(n, k)).astype("float32"), columns=[f"f{i}" for i in range(k)])
    df["label"] = rng.integers(0, C, n)
    path = str(tmp_path / "big.csv")
    df.to_csv(path, index=False)
    size = os.path.getsize(path)
    m = bf.Sequential([bf.layers.Dense(C, activation="softmax", input_shape=(k,))])
    m.compile("sgd", "sparse_categorical_crossentropy")
    with _arrow_pool() as pool:
        src = bf.data.from_csv(path, x=[f"f{i}" for i in range(k)], y="label", batch_size=512, shuffle=True,
                               block_size=8192)
        m.fit(src, epochs=1, verbose=0)
    block = next(e.bytes for e in m._last_plan.breakdown if "one block of 8192 bytes" in e.name)
    assert 0 < pool.max_memory() <= block < size / 4


def test_csv_block_that_does_not_parse_is_refused_naming_the_batch(tmp_path):
    path = str(tmp_path / "bad.csv")
    rows = ["f0,f1,f2,f3,label"] + [f"{i},1,2,3,{i % 3}" for i in range(200)] + ["x,1,2,3,0"]
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
    src = bf.data.from_csv(path, x=FEATURES, y="label", batch_size=16, block_size=256)
    with pytest.raises(bf.DataError, match=r"bad.csv: batch \d+: .*'x'") as e:
        _model().fit(src, verbose=0)
    assert e.value.batch_index > 0


# ---- Hugging Face datasets ----

def test_hf_dataset_trains_as_the_arrays():
    datasets = pytest.importorskip("datasets")
    x, y = _data()
    ds = datasets.Dataset.from_dict({"features": x.tolist(), "label": y.tolist()})
    ds = ds.cast_column("features", datasets.Sequence(datasets.Value("float32"), length=F))
    a, b = _pair()
    ref = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, validation_data=(x[:40], y[:40]))
    h = b.fit(bf.data.from_hf(ds, x="features", y="label", batch_size=16), epochs=2, verbose=0,
              validation_data=bf.data.from_hf(ds.select(range(40)), x="features", y="label", batch_size=16))
    _same(ref, h)
    with pytest.raises(bf.DataError, match=r"x: a Hugging Face Dataset yields one row at a time; .*bf.data.from_hf"):
        b.fit(ds, verbose=0)
