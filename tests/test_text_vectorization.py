"""layers.TextVectorization (layers/text.py, pure Python / NumPy) against
Keras 3's own (its text ops run on TensorFlow, which the reference needs and
boundfit does not: its outputs are recorded in
tests/references/text_vectorization.npz by make_text_vectorization.py):
vocabularies and outputs for each mode and option, adapt from a generator,
set_vocabulary and configs; models on string inputs (engine/host_stage.py):
keras.io's end-to-end inference model predicts and evaluates as the int
model on pre-vectorized ids, trains the same, plans the vectorized batch,
loads Keras's files and saves files Keras opens with the vocabulary (live,
with TensorFlow); each failure path raises naming the argument."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import boundfit as bf
import keras_ref
import recorded
from boundfit import layers as L

CORPUS = ["The cat sat on the mat.", "The dog ate my homework!", "Héllo WORLD, ÉCOLE straße!",
          "a\u00a0b c\x1cd  e\u2003f\tg", "Ünïcode ΣΑΣ ok-go it's", "", "the the cat, the dog; THE end",
          "multiple   spaces\nand\nlines", "dog cat dog cat mat"]
TEST = ["the cat ate the mat", "unknown words here!", "ΣΑΣ straße DOG", "", "cat"]

CONFIGS = [dict(), dict(max_tokens=6), dict(output_sequence_length=4), dict(output_sequence_length=12),
           dict(standardize=None), dict(standardize="lower"), dict(standardize="strip_punctuation"),
           dict(split="character", max_tokens=20), dict(ngrams=2), dict(ngrams=(1, 3), max_tokens=15),
           dict(output_mode="multi_hot"), dict(output_mode="count", max_tokens=8),
           dict(output_mode="count", max_tokens=8, pad_to_max_tokens=True), dict(output_mode="tf_idf"),
           dict(output_mode="tf_idf", max_tokens=6, pad_to_max_tokens=True), dict(output_mode="multi_hot", ngrams=2),
           dict(split=None)]
CALLABLE_DATA = np.array(["a,b,b", "c,a", "x y,z"]).reshape(-1, 1)
CALLABLE_TEST = np.array(["b,q", "x y"]).reshape(-1, 1)
SET_VOCABULARY = [(dict(), ["cat", "the", "dog"]), (dict(), ["", "[UNK]", "cat", "the"]),
                  (dict(output_mode="multi_hot"), ["[UNK]", "cat", "the"])]
IDF = [(["cat", "the"], [0.5, 2.0]), (["[UNK]", "cat", "the"], [0.1, 0.5, 2.0])]
VOCAB_FILE = "the\ncat\nstraße\n"
FROM_CONFIG = dict(max_tokens=9, ngrams=(1, 2), output_sequence_length=3)


def _inputs(cfg):
    """What each mode and option is called on: a column of str, of bytes, and (when it splits) more forms."""
    inputs = [np.array(TEST).reshape(-1, 1), np.array([t.encode() for t in TEST], dtype=object).reshape(-1, 1)]
    if cfg.get("split", "whitespace") is not None:
        inputs += [TEST, np.array(TEST), TEST[0], TEST[2].encode()]   # a single string: one row, no batch axis
    return inputs


def _adapt_batches():
    for s in range(0, len(CORPUS), 2):
        yield np.array(CORPUS[s:s + 2])


def _keras_tv():
    pytest.importorskip("tensorflow", reason="Keras 3's TextVectorization needs TensorFlow")
    return keras_ref.load()


def _keras_recorded():
    return recorded.load("text_vectorization")


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_vocabulary_and_outputs_equal_keras_for_each_mode_and_option(cfg):
    k, i = _keras_recorded(), CONFIGS.index(cfg)
    b = L.TextVectorization(**cfg)
    b.adapt(CORPUS)
    assert b.get_vocabulary() == recorded.value(k, f"modes/{i}/vocabulary")
    assert b.vocabulary_size() == recorded.value(k, f"modes/{i}/vocabulary_size")
    for x, want in zip(_inputs(cfg), recorded.batches(k, f"modes/{i}/outputs")[0], strict=True):
        _same(want, b(x))


def test_standardize_callable_and_split_callable_match_keras():
    """Keras split on "," with tf.strings.split."""
    k = _keras_recorded()
    b = L.TextVectorization(standardize=lambda a: np.char.upper(a), split=lambda a: [s.split(",") for s in a])
    b.adapt(CALLABLE_DATA)
    assert b.get_vocabulary() == recorded.value(k, "callable/vocabulary")
    _same(k["callable/output"], b(CALLABLE_TEST))


def test_adapt_from_a_generator_or_sequence_equals_keras_and_adapt_on_the_array():
    k = _keras_recorded()
    batches = _adapt_batches

    class Seq(bf.utils.Sequence):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.array(CORPUS[2 * i:2 * i + 2]).reshape(-1, 1)

    for mode in ("int", "tf_idf"):   # Keras adapted on batches()
        for data in (batches(), Seq(), CORPUS):
            b = L.TextVectorization(output_mode=mode)
            b.adapt(data)
            assert b.get_vocabulary() == recorded.value(k, f"adapt/{mode}/vocabulary")
            _same(k[f"adapt/{mode}/output"], b(TEST))
    b = L.TextVectorization()   # steps: the first batches only
    b.adapt(batches(), steps=2)
    assert b.get_vocabulary() == recorded.value(k, "adapt/steps=2/vocabulary")


def test_set_vocabulary_idf_weights_file_and_config_equal_keras(tmp_path):
    k = _keras_recorded()
    for i, (args, vocab) in enumerate(SET_VOCABULARY):
        b = L.TextVectorization(**args)
        b.set_vocabulary(vocab)
        assert b.get_vocabulary() == recorded.value(k, f"set_vocabulary/{i}/vocabulary")
        _same(k[f"set_vocabulary/{i}/output"], b(TEST))
    for i, (vocab, idf) in enumerate(IDF):
        b = L.TextVectorization(output_mode="tf_idf", max_tokens=6, pad_to_max_tokens=True, vocabulary=vocab,
                                idf_weights=idf)
        _same(k[f"idf/{i}/output"], b(TEST))
        assert b.get_config() == recorded.value(k, f"idf/{i}/config") | {"name": b.name}
    path = tmp_path / "vocab.txt"
    path.write_text(VOCAB_FILE, encoding="utf-8")
    b = L.TextVectorization()
    b.set_vocabulary(str(path))
    _same(k["file/output"], b(TEST))
    config = recorded.value(k, "from_config/config")   # Keras's layer with FROM_CONFIG, adapted on CORPUS
    b = L.TextVectorization.from_config(config)
    b.adapt(CORPUS)
    assert b.get_config() == config | {"name": b.name}
    _same(k["from_config/output"], b(TEST))


# ---- models on string inputs ----

def _texts(n, seed=0):
    rng = np.random.default_rng(seed)
    words = "good bad great awful fine movie plot actor boring fun".split()
    texts = np.array([" ".join(rng.choice(words, rng.integers(3, 12))) for _ in range(n)])
    labels = np.array([float("good" in t or "great" in t) for t in texts], np.float32)
    return texts, labels


def _int_model(vocab):
    """keras.io "text classification from scratch": ids of any length -> a probability."""
    inputs = bf.Input(shape=(None,), dtype="int64")
    x = L.Embedding(vocab, 8)(inputs)
    x = L.Dropout(0.5)(x)
    x = L.Conv1D(8, 3, padding="valid", activation="relu")(x)
    x = L.GlobalMaxPooling1D()(x)
    x = L.Dense(8, activation="relu")(x)
    model = bf.Model(inputs, L.Dense(1, activation="sigmoid", name="predictions")(x))
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def _end_to_end(vectorize_layer, model):
    inputs = bf.Input(shape=(1,), dtype="string")
    indices = vectorize_layer(inputs)
    end_to_end_model = bf.Model(inputs, model(indices))
    end_to_end_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return end_to_end_model


def test_end_to_end_model_predicts_and_evaluates_as_the_int_model_on_ids():
    texts, labels = _texts(70)
    vectorize_layer = L.TextVectorization(max_tokens=12, output_mode="int", output_sequence_length=10)
    vectorize_layer.adapt(texts)
    ids = vectorize_layer(texts)
    model = _int_model(12)
    model.fit(ids, labels, batch_size=16, epochs=2, verbose=0)
    e2e = _end_to_end(vectorize_layer, model)
    for x in (texts, texts.reshape(-1, 1), list(texts), np.array([t.encode() for t in texts], dtype=object)):
        np.testing.assert_array_equal(e2e.predict(x, batch_size=16, verbose=0), model.predict(ids, batch_size=16,
                                                                                                verbose=0))
    assert e2e.evaluate(texts, labels, batch_size=16, verbose=0) == model.evaluate(ids, labels, batch_size=16,
                                                                                  verbose=0)

    def gen(xs):
        for s in range(0, 70, 16):
            yield xs[s:s + 16], labels[s:s + 16]
    np.testing.assert_array_equal(e2e.predict(((x,) for x, _ in gen(texts)), verbose=0),
                                  model.predict(((x,) for x, _ in gen(ids)), verbose=0))
    assert e2e.evaluate(gen(texts), verbose=0) == model.evaluate(gen(ids), verbose=0)


def test_training_on_strings_equals_training_on_ids_shuffled_with_validation():
    texts, labels = _texts(64, seed=1)
    vl = L.TextVectorization(max_tokens=12, output_sequence_length=8)
    vl.adapt(texts)
    ids = vl(texts)
    a, b = _int_model(12), _int_model(12)
    e2e = _end_to_end(vl, b)
    b.set_weights(a.get_weights())
    runs = []
    for m, x in ((a, ids), (e2e, texts)):
        bf.utils.set_random_seed(7)
        h = m.fit(x, labels, batch_size=16, epochs=2, validation_split=0.25, verbose=0)
        runs.append(h.history)
    assert runs[0] == runs[1]
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)


def test_a_string_input_beside_a_numeric_one_trains_as_on_pre_vectorized_numbers():
    """Shuffled batches gather the numeric input and the labels into the batch's buffers."""
    texts, y = _texts(40, seed=6)
    feat = np.random.default_rng(6).standard_normal((40, 3)).astype(np.float32)
    vl = L.TextVectorization(output_mode="multi_hot")
    vl.adapt(texts)
    t_in, f_in = bf.Input(shape=(1,), dtype="string", name="text"), bf.Input(shape=(3,), name="feat")
    hidden, out = L.Dense(4, activation="relu"), L.Dense(1, activation="sigmoid")
    m = bf.Model([t_in, f_in], out(hidden(L.Concatenate()([vl(t_in), f_in]))))
    a_in, b_in = bf.Input(shape=(vl.vocabulary_size(),)), bf.Input(shape=(3,))
    ref = bf.Model([a_in, b_in], out(hidden(L.Concatenate()([a_in, b_in]))))   # the same Dense layers
    nums = [vl(texts).astype(np.float32), feat]
    m.compile(optimizer="adam", loss="binary_crossentropy")
    ref.compile(optimizer="adam", loss="binary_crossentropy")
    w0, runs = m.get_weights(), []
    for model, x in ((m, {"text": texts, "feat": feat}), (ref, nums)):
        model.set_weights(w0)
        p = model.predict(x, batch_size=16, verbose=0)
        bf.utils.set_random_seed(1)
        h = model.fit(x, y, batch_size=8, epochs=2, validation_split=0.2, verbose=0).history
        runs.append((p, h, model.get_weights()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    for a, b in zip(runs[0][2], runs[1][2]):
        np.testing.assert_array_equal(a, b)


def test_the_plan_counts_the_vectorized_batch_and_the_arenas_equal_their_plan():
    texts, labels = _texts(40, seed=2)
    vl = L.TextVectorization(max_tokens=12, output_sequence_length=10)
    vl.adapt(texts)
    e2e = _end_to_end(vl, _int_model(12))
    plan = e2e.estimate_memory(batch_size=8)
    mine = [e for e in plan.breakdown if e.name.startswith(vl.name)]
    assert [e.bytes for e in mine] == [8 * 10 * 4]
    e2e.fit(texts, labels, batch_size=8, epochs=1, verbose=0)
    fit_plan = e2e._last_plan
    stats = e2e._last_run_stats
    arenas = e2e._engine.weight_arena_bytes + e2e._engine.optimizer_arena_bytes + sum(s["run_high_water"]
                                                                                      for s in stats)
    assert sum(e.bytes for e in fit_plan.breakdown if e.category not in ("runtime", "measured")) == arenas
    gathered = [e for e in fit_plan.breakdown if e.name.startswith("one shuffled batch")]
    assert len(gathered) == 1 and gathered[0].bytes >= 8 * (1 + 1) * 4   # labels and weights of 8 rows, bound


def test_sequential_with_text_vectorization_and_multi_hot_trains_and_predicts():
    texts, labels = _texts(48, seed=3)
    vl = L.TextVectorization(output_mode="multi_hot")
    vl.adapt(texts)
    m = bf.Sequential([bf.Input(shape=(1,), dtype="string"), vl, L.Dense(4, activation="relu"),
                       L.Dense(1, activation="sigmoid")])
    m.compile(loss="binary_crossentropy", optimizer="adam")
    m.fit(texts, labels, batch_size=16, epochs=1, verbose=0)
    dense = bf.Sequential([bf.Input(shape=(vl.vocabulary_size(),)), m.layers[1], m.layers[2]])
    np.testing.assert_array_equal(m.predict(texts, verbose=0), dense.predict(vl(texts).astype(np.float32),
                                                                             verbose=0))


def _saved_model(mode):
    """A model on strings to save: its TextVectorization (int or tf_idf) adapted on 24 texts, and the texts."""
    texts, _ = _texts(24, seed=4)
    vl = L.TextVectorization(output_mode=mode, **({"output_sequence_length": 6} if mode == "int" else {}))
    vl.adapt(texts)
    i = bf.Input(shape=(1,), dtype="string")
    x = vl(i)
    if mode == "int":
        x = L.GlobalAveragePooling1D()(L.Embedding(vl.vocabulary_size(), 3)(x))
    m = bf.Model(i, L.Dense(1)(x))
    m.compile(optimizer="adam", loss="mse")
    return m, vl, texts


def _keras_predict(km, texts):
    """Keras on JAX runs no string model: its layers in turn. (The vectorized batch, the predictions.)"""
    ids = y = km.layers[1](texts.reshape(-1, 1))
    for layer in km.layers[2:]:
        y = layer(y)
    return np.asarray(ids), np.asarray(y)


@pytest.mark.parametrize("mode", ["int", "tf_idf"])
def test_saved_files_and_keras_files_load_with_the_vocabulary_and_predict_the_same(mode, tmp_path):
    """Keras's file: the model of _saved_model as Keras saved it (recorded with its vocabulary and its
    predictions after opening boundfit's file)."""
    k = _keras_recorded()
    m, vl, texts = _saved_model(mode)
    want = m.predict(texts, verbose=0)
    (tmp_path / "k.keras").write_bytes(k[f"keras_file/{mode}/file"].tobytes())
    for path in (tmp_path / "m.keras", tmp_path / "m.npz"):
        m.save(path)
        back = bf.models.load_model(path)
        assert back.layers[1].get_vocabulary() == vl.get_vocabulary()
        np.testing.assert_allclose(back.predict(texts, verbose=0), want, rtol=1e-6, atol=1e-7)
    back = bf.models.load_model(tmp_path / "k.keras")
    assert back.layers[1].get_vocabulary() == recorded.value(k, f"keras_file/{mode}/vocabulary")
    np.testing.assert_allclose(back.predict(texts, verbose=0), k[f"keras_file/{mode}/predictions"], rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("mode", ["int", "tf_idf"])
def test_saved_files_open_in_keras_with_the_vocabulary_and_round_trip(mode, tmp_path):
    """Live: Keras 3's TextVectorization needs TensorFlow to open the file."""
    keras = _keras_tv()
    m, vl, texts = _saved_model(mode)
    want = m.predict(texts, verbose=0)
    m.save(tmp_path / "m.keras")
    km = keras.models.load_model(tmp_path / "m.keras")
    assert [str(t) for t in km.layers[1].get_vocabulary()] == vl.get_vocabulary()
    ids, y = _keras_predict(km, texts)
    _same(ids, vl(texts.reshape(-1, 1)))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    km.save(tmp_path / "k.keras")
    back = bf.models.load_model(tmp_path / "k.keras")
    assert back.layers[1].get_vocabulary() == vl.get_vocabulary()
    np.testing.assert_allclose(back.predict(texts, verbose=0), want, rtol=1e-6, atol=1e-7)


# ---- failure paths ----

@pytest.mark.parametrize("kwargs, arg", [(dict(standardize="upper"), "standardize"), (dict(split="comma"), "split"),
                                         (dict(output_mode="one_hot"), "one_hot"), (dict(output_mode="bag"),
                                                                                   "output_mode"),
                                         (dict(ragged=True), "ragged"), (dict(sparse=True), "sparse"),
                                         (dict(output_mode="count", output_sequence_length=3),
                                          "output_sequence_length"),
                                         (dict(output_sequence_length=0), "output_sequence_length"),
                                         (dict(ngrams=0), "ngrams"), (dict(ngrams="2"), "ngrams"),
                                         (dict(max_tokens=1), "max_tokens"), (dict(idf_weights=[1.0]), "idf_weights"),
                                         (dict(output_mode="tf_idf", vocabulary=["a"]), "idf_weights")])
def test_bad_arguments_raise_naming_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        L.TextVectorization(**kwargs)


def test_bad_data_and_calls_raise_clear_errors(tmp_path):
    vl = L.TextVectorization(output_sequence_length=4)
    with pytest.raises(ValueError, match="no vocabulary.*adapt"):
        vl(["a b"])                                      # called before adapt, no vocabulary
    with pytest.raises(bf.DataError, match="takes strings"):
        vl.adapt(np.arange(6))
    vl.adapt(["a b c", "b c"])
    with pytest.raises(bf.DataError, match="takes strings, got an array of dtype int64"):
        vl(np.arange(3))
    with pytest.raises(bf.DataError, match="one string per sample"):
        vl(np.array([["a", "b"]]))
    with pytest.raises(bf.DataError, match="must hold strings.*int"):
        vl(np.array(["a", 3], dtype=object))
    with pytest.raises(ValueError, match="static vocabulary"):
        L.TextVectorization(vocabulary=["a"]).adapt(["a b"])
    with pytest.raises(ValueError, match="repeated"):
        L.TextVectorization().set_vocabulary(["a", "b", "a"])
    with pytest.raises(bf.DataError, match="no tokens"):
        L.TextVectorization().adapt(["", "  "])
    s = bf.Input(shape=(1,), dtype="string")
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization()(s)                         # a model plans one shape
    with pytest.raises(ValueError, match="vocabulary must be set"):
        L.TextVectorization(output_mode="multi_hot")(s)
    with pytest.raises(ValueError, match="string tensor"):
        L.Dense(2)(s)
    with pytest.raises(ValueError, match="string input"):
        vl(bf.Input(shape=(1,)))
    m = bf.Model(s, L.Dense(1)(L.Embedding(5, 2)(vl(s))))
    m.compile(optimizer="adam", loss="mse")
    with pytest.raises(bf.DataError, match="takes strings"):
        m.fit(np.zeros((4, 1)), np.zeros(4), verbose=0)
    with pytest.raises(bf.DataError, match="batch 1: .*must hold strings"):
        m.predict(np.array(["a", "b", 7, "c"], dtype=object), batch_size=2, verbose=0)
    outer = bf.Input(shape=(1,), dtype="string")
    with pytest.raises(ValueError, match="starts with host-side preprocessing"):
        bf.Model(outer, m(outer))                        # the stage runs on the outer model's own Input
    v2 = L.TextVectorization(output_sequence_length=4)
    v2.adapt(["a b"])
    s4 = bf.Input(shape=(1,), dtype="string")
    with pytest.raises(ValueError, match="feeds two host-side layers"):
        bf.Model(s4, L.Dense(1)(L.Concatenate()([vl(s4), v2(s4)])))
    mh = L.TextVectorization(output_mode="multi_hot")
    mh.adapt(["a b"])
    s3 = bf.Input(shape=(1,), dtype="string")
    m3 = bf.Model(s3, L.Dense(1)(mh(s3)))
    mh.adapt(["a b c d"])                                # 5 values per sample now, the model was built for 3
    with pytest.raises(ValueError, match="now makes 5 values per sample.*built for 3"):
        m3.predict(["a"], verbose=0)
    cv = L.TextVectorization(standardize=np.char.lower, output_sequence_length=2)
    cv.adapt(["a b"])
    s2 = bf.Input(shape=(1,), dtype="string")
    with pytest.raises(ValueError, match="standardize is a callable"):
        bf.Model(s2, L.Dense(1)(cv(s2))).save(tmp_path / "m.keras")
    assert not (tmp_path / "m.keras").exists()


def test_first_fit_on_strings_grows_rss_by_at_most_its_plan():
    """The first-fit rule (docs/memory-plans.md) in a fresh process: the vectorized batch and
    the Python objects vectorizing it (bounded by the longest text) are in
    the plan."""
    code = textwrap.dedent("""
        import numpy as np, boundfit as bf
        from boundfit import layers
        from boundfit.runtime import budget
        rng = np.random.default_rng(0)
        texts = np.array([" ".join(rng.choice([f"w{i}" for i in range(2000)], 1000)) for _ in range(128)])
        vl = layers.TextVectorization(max_tokens=1000, output_sequence_length=200)
        vl.adapt(texts)
        i = bf.Input(shape=(1,), dtype="string")
        m = bf.Model(i, layers.Dense(1, activation="sigmoid")(layers.GlobalAveragePooling1D()(
            layers.Embedding(1000, 16)(vl(i)))))
        m.compile(optimizer="adam", loss="binary_crossentropy")
        m.estimate_memory(64)
        open("/proc/self/clear_refs", "w").write("5")
        r0 = budget.process_usage_bytes()
        m.fit(texts, (np.arange(128) % 2).astype(np.float32), batch_size=64, validation_split=0.25, verbose=0)
        p = m._last_plan
        print("GROWTH", p.host_bytes - p.held_bytes, budget.peak_rss_bytes() - r0)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    new, grown = map(int, r.stdout.split("GROWTH")[1].split())
    print(f"grew {grown / 2**20:.2f} MiB, plan {new / 2**20:.2f} MiB new")
    assert 0 < grown <= new, (grown, new)


def test_keras_io_text_classification_from_scratch_runs_with_tf_data():
    """keras.io's "Text classification from scratch" as written (its IMDB
    folders replaced by a small tf.data.Dataset of synthetic reviews): a
    tf.strings standardization, adapt on a tf.data map, training on
    `raw_train_ds.map(vectorize_text)` (the layer runs through
    tf.numpy_function there), then the end-to-end model on raw strings."""
    pytest.importorskip("tensorflow", reason="a tf.data pipeline needs TensorFlow")
    import re
    import string

    import tensorflow as tf
    keras, layers = bf, bf.layers
    texts, labels = _texts(96, seed=5)
    texts = np.array([t + "<br />" for t in texts])
    raw_train_ds = tf.data.Dataset.from_tensor_slices((texts, labels.astype(np.int64))).batch(32)

    def custom_standardization(input_data):
        lowercase = tf.strings.lower(input_data)
        stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
        return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")

    max_features, embedding_dim, sequence_length = 14, 8, 12
    vectorize_layer = keras.layers.TextVectorization(standardize=custom_standardization, max_tokens=max_features,
                                                     output_mode="int", output_sequence_length=sequence_length)
    text_ds = raw_train_ds.map(lambda x, y: x)
    vectorize_layer.adapt(text_ds)
    assert "<br" not in " ".join(vectorize_layer.get_vocabulary())

    def vectorize_text(text, label):
        text = tf.expand_dims(text, -1)
        return vectorize_layer(text), label

    train_ds = raw_train_ds.map(vectorize_text)
    inputs = keras.Input(shape=(None,), dtype="int64")
    x = layers.Embedding(max_features, embedding_dim)(inputs)
    x = layers.Dropout(0.5)(x)
    x = layers.Conv1D(8, 3, padding="valid", activation="relu", strides=1)(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Dense(8, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)
    model = keras.Model(inputs, predictions)
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(train_ds, validation_data=train_ds, epochs=2, verbose=0)
    ids = vectorize_layer(texts.reshape(-1, 1))
    for (xb, _), want in zip(train_ds, np.split(ids, [32, 64])):
        np.testing.assert_array_equal(np.asarray(xb), want)
    inputs = keras.Input(shape=(1,), dtype="string")
    indices = vectorize_layer(inputs)
    outputs = model(indices)
    end_to_end_model = keras.Model(inputs, outputs)
    end_to_end_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    assert end_to_end_model.evaluate(raw_train_ds, verbose=0) == model.evaluate(ids, labels, batch_size=32, verbose=0)
