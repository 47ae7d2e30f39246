"""Records Keras 3's image_ / text_ / audio_dataset_from_directory (their
tf.data path) for tests/test_directory_datasets.py, on that file's folders:
the image folder itself (its files' bytes: JPEG encoders differ between
Pillow builds), and for each argument set the file paths, class names,
lengths, pixels / texts / waveforms and labels Keras reads.

Run by hand, with Keras 3 on JAX, TensorFlow and Pillow installed
(pip install keras "jax[cpu]" tensorflow-cpu pillow), from the repository root:

    PYTHONPATH=python python tests/references/make_directory_datasets.py

It rewrites tests/references/directory_datasets.npz."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras_ref  # noqa: E402
import recorded  # noqa: E402
import test_directory_datasets as t  # noqa: E402

keras = keras_ref.load()
utils = keras.utils


def batches(ds):
    xs, ys = zip(*((x.numpy(), y.numpy()) for x, y in ds))
    return np.concatenate(xs), np.concatenate(ys)


rec = {}
with tempfile.TemporaryDirectory() as root:
    t._write_images(root, {"cat": 7, "dog": 5, "eel": 4})
    files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
    recorded.put_value(rec, "folder/files", files)
    for i, rel in enumerate(files):
        with open(os.path.join(root, rel), "rb") as f:
            rec[f"folder/{i}"] = np.frombuffer(f.read(), np.uint8)
    for j, kw in enumerate(t.IMAGE_FOLDER_ARGS):
        ref = utils.image_dataset_from_directory(root, image_size=(12, 15), batch_size=4, verbose=False, **kw)
        ref = ref if kw.get("subset") == "both" else (ref,)
        recorded.put_value(rec, f"image/{j}/subsets", len(ref))
        for s, r in enumerate(ref):
            recorded.put_value(rec, f"image/{j}/{s}/file_paths", [os.path.relpath(p, root) for p in r.file_paths])
            recorded.put_value(rec, f"image/{j}/{s}/class_names", list(r.class_names))
            recorded.put_value(rec, f"image/{j}/{s}/len", len(r))
            x, rec[f"image/{j}/{s}/y"] = batches(r)
            if not kw.get("shuffle", True) or s == 1:   # no shuffle buffer: the pixels the test compares
                rec[f"image/{j}/{s}/x"] = x

for j, kw in enumerate(t.LINK_ARGS):
    with tempfile.TemporaryDirectory() as root:
        t._link(t._write_images(root, {"cat": 7, "dog": 5, "eel": 4}))
        ref = utils.image_dataset_from_directory(root, image_size=(12, 15), batch_size=4, shuffle=False,
                                                 verbose=False, **kw)
        recorded.put_value(rec, f"link/{j}/file_paths", [os.path.relpath(p, root) for p in ref.file_paths])
        rec[f"link/{j}/y"] = batches(ref)[1]

for j, kw in enumerate(t.PNG_ARGS):
    with tempfile.TemporaryDirectory() as root:
        args = dict(image_size=(12, 15), batch_size=2, shuffle=False, verbose=False, **kw)
        rec[f"png/{j}/x"] = batches(utils.image_dataset_from_directory(t._write_pngs(root), **args))[0]

with tempfile.TemporaryDirectory() as root:
    t._write_texts(root)
    for j, kw in enumerate(t.TEXT_ARGS):
        ref = utils.text_dataset_from_directory(root, batch_size=3, verbose=False, **kw)
        recorded.put_value(rec, f"text/{j}/class_names", list(ref.class_names))
        x, rec[f"text/{j}/y"] = batches(ref)
        recorded.put_value(rec, f"text/{j}/x", list(x))

with tempfile.TemporaryDirectory() as root:
    t._write_wavs(root)
    for j, kw in enumerate(t.AUDIO_ARGS):
        ref = utils.audio_dataset_from_directory(root, batch_size=4, shuffle=False, verbose=False, **kw)
        recorded.put_value(rec, f"audio/{j}/class_names", list(ref.class_names))
        recorded.put_batches(rec, f"audio/{j}", [(x.numpy(), y.numpy()) for x, y in ref])
recorded.save("directory_datasets", rec)
print(f"{len(rec)} arrays -> {os.path.join(recorded.HERE, 'directory_datasets.npz')}")
