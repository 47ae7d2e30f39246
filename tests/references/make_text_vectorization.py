"""Records Keras 3's layers.TextVectorization (its text ops run on
TensorFlow) for tests/test_text_vectorization.py, on that file's inputs:
vocabularies and outputs for each of CONFIGS, with callables, adapted from
batches, with set_vocabulary / idf_weights / a vocabulary file / from_config
(and the configs), and the .keras file Keras saves after opening boundfit's
(_saved_model), with its vocabulary and predictions.

Run by hand, with Keras 3 on JAX and TensorFlow installed
(pip install keras "jax[cpu]" tensorflow-cpu), from the repository root:

    PYTHONPATH=python python tests/references/make_text_vectorization.py

It rewrites tests/references/text_vectorization.npz."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras_ref  # noqa: E402
import recorded  # noqa: E402
import test_text_vectorization as t  # noqa: E402

keras = keras_ref.load()
import tensorflow as tf  # noqa: E402

TV = keras.layers.TextVectorization
vocabulary = lambda k: [str(w) for w in k.get_vocabulary()]
rec = {}
for i, cfg in enumerate(t.CONFIGS):
    k = TV(**cfg)
    k.adapt(t.CORPUS)
    recorded.put_value(rec, f"modes/{i}/vocabulary", vocabulary(k))
    recorded.put_value(rec, f"modes/{i}/vocabulary_size", int(k.vocabulary_size()))
    recorded.put_batches(rec, f"modes/{i}/outputs", [[np.asarray(k(x)) for x in t._inputs(cfg)]])

k = TV(standardize=lambda a: np.char.upper(a), split=lambda s: tf.strings.split(s, ","))
k.adapt(t.CALLABLE_DATA)
recorded.put_value(rec, "callable/vocabulary", vocabulary(k))
rec["callable/output"] = np.asarray(k(t.CALLABLE_TEST))

for mode in ("int", "tf_idf"):
    k = TV(output_mode=mode)
    k.adapt(t._adapt_batches())
    recorded.put_value(rec, f"adapt/{mode}/vocabulary", vocabulary(k))
    rec[f"adapt/{mode}/output"] = np.asarray(k(t.TEST))
k = TV()
k.adapt(t._adapt_batches(), steps=2)
recorded.put_value(rec, "adapt/steps=2/vocabulary", vocabulary(k))

for i, (args, vocab) in enumerate(t.SET_VOCABULARY):
    k = TV(**args)
    k.set_vocabulary(vocab)
    recorded.put_value(rec, f"set_vocabulary/{i}/vocabulary", vocabulary(k))
    rec[f"set_vocabulary/{i}/output"] = np.asarray(k(t.TEST))
for i, (vocab, idf) in enumerate(t.IDF):
    k = TV(output_mode="tf_idf", max_tokens=6, pad_to_max_tokens=True, vocabulary=vocab, idf_weights=idf)
    rec[f"idf/{i}/output"] = np.asarray(k(t.TEST))
    recorded.put_value(rec, f"idf/{i}/config", k.get_config())
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(t.VOCAB_FILE)
    k = TV()
    k.set_vocabulary(path)
    rec["file/output"] = np.asarray(k(t.TEST))
k = TV(**t.FROM_CONFIG)
k.adapt(t.CORPUS)
recorded.put_value(rec, "from_config/config", k.get_config())
rec["from_config/output"] = np.asarray(k(t.TEST))

for mode in ("int", "tf_idf"):
    with tempfile.TemporaryDirectory() as d:
        m, _, texts = t._saved_model(mode)
        m.save(os.path.join(d, "m.keras"))
        km = keras.models.load_model(os.path.join(d, "m.keras"))
        km.save(os.path.join(d, "k.keras"))
        km = keras.models.load_model(os.path.join(d, "k.keras"))
        with open(os.path.join(d, "k.keras"), "rb") as f:
            rec[f"keras_file/{mode}/file"] = np.frombuffer(f.read(), np.uint8)
        recorded.put_value(rec, f"keras_file/{mode}/vocabulary", vocabulary(km.layers[1]))
        rec[f"keras_file/{mode}/predictions"] = t._keras_predict(km, texts)[1]
recorded.save("text_vectorization", rec)
print(f"{len(rec)} arrays -> {os.path.join(recorded.HERE, 'text_vectorization.npz')}")
