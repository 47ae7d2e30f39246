"""image_ / text_ / audio_dataset_from_directory against Keras 3 (its
tf.data path, recorded in tests/references/directory_datasets.npz by
make_directory_datasets.py) on the same folders: the same
files in the same subsets and order for the same seed, the same labels and
class_names, the same pixels (PNG: TensorFlow's resize, each of Keras's eight
interpolations, cropped and padded too; JPEG: within the two
libjpeg builds' decoding difference), texts and audio; bad folders and
files are named (or skipped, skip_bad_files=True); a model trains from an
image folder with workers, and from one three times a memory cgroup's limit
(RLIMIT_AS where no cgroup can be made), its first fit growing within its
plan."""

import contextlib
import io
import os
import subprocess
import sys
import wave

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers

import recorded
from cgroup_util import memory_cgroup

Image = pytest.importorskip("PIL.Image")


def _write_images(root, counts, size_range=(8, 30), seed=0):
    rng = np.random.default_rng(seed)
    for c, n in counts.items():
        os.makedirs(os.path.join(root, c, "nested"), exist_ok=True)
        for i in range(n):
            h, w = (int(v) for v in rng.integers(*size_range, 2))   # mixed sizes, resized as asked
            a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            ext = ("png", "jpg", "png", "bmp")[i % 4]
            sub = "nested" if i == 2 else ""
            Image.fromarray(a).save(os.path.join(root, c, sub, f"img{i}.{ext}"))
        with open(os.path.join(root, c, "notes.txt"), "w") as f:   # not an image: ignored
            f.write("not an image")
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The folder Keras read: {"cat": 7, "dog": 5, "eel": 4} images of _write_images, as recorded (JPEG
    encoders differ between Pillow builds)."""
    return _write_recorded_folder(str(tmp_path_factory.mktemp("images")), recorded.load("directory_datasets"))


def _write_recorded_folder(root, rec):
    for i, rel in enumerate(recorded.value(rec, "folder/files")):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(rec[f"folder/{i}"].tobytes())
    return root


def _batches(ds):
    xs, ys = zip(*(ds[i] for i in range(len(ds))))
    return np.concatenate(xs), np.concatenate(ys)


IMAGE_FOLDER_ARGS = [dict(seed=1), dict(seed=2, validation_split=0.3, subset="both"),
                     dict(seed=3, validation_split=0.25, subset="training", label_mode="categorical"),
                     dict(shuffle=False, class_names=["eel", "cat"], label_mode="binary"),
                     dict(seed=4, labels=[3, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0])]


@pytest.mark.parametrize("kw", IMAGE_FOLDER_ARGS)
def test_image_files_subsets_order_labels_and_class_names_match_keras(folder, kw):
    k, j = recorded.load("directory_datasets"), IMAGE_FOLDER_ARGS.index(kw)
    ours = bf.utils.image_dataset_from_directory(folder, image_size=(12, 15), batch_size=4, verbose=False, **kw)
    ours = ours if kw.get("subset") == "both" else (ours,)
    assert len(ours) == recorded.value(k, f"image/{j}/subsets")
    for s, o in enumerate(ours):
        r = f"image/{j}/{s}"
        assert o.file_paths == [os.path.join(folder, p) for p in recorded.value(k, f"{r}/file_paths")]
        assert o.class_names == recorded.value(k, f"{r}/class_names")
        assert len(o) == recorded.value(k, f"{r}/len")
        ox, oy = _batches(o)
        ry = k[f"{r}/y"]
        if not kw.get("shuffle", True) or o is ours[-1] and len(ours) == 2:   # no tf.data shuffle buffer: same batches
            rx = k[f"{r}/x"]
            np.testing.assert_array_equal(oy, ry)
            assert ox.shape == rx.shape and ox.dtype == rx.dtype == np.float32
            np.testing.assert_allclose(ox, rx, atol=6)   # JPEG: the two libjpeg builds differ by a few levels
        else:   # Keras draws batches from a shuffle buffer: the same (file, label) pairs
            assert sorted(map(str, oy.tolist())) == sorted(map(str, ry.tolist()))


LINK_ARGS = [dict(follow_links=False), dict(follow_links=True)]


def _link(root):
    """A folder of the image folder's, linked into another class: eel/more -> dog/nested."""
    os.symlink(os.path.join(root, "dog", "nested"), os.path.join(root, "eel", "more"))
    return root


@pytest.mark.parametrize("kw", LINK_ARGS)
def test_follow_links_reads_linked_folders_as_keras(tmp_path, kw):
    k = recorded.load("directory_datasets")
    root = _link(_write_recorded_folder(str(tmp_path), k))
    ours = bf.utils.image_dataset_from_directory(root, image_size=(12, 15), batch_size=4, shuffle=False,
                                                 verbose=False, **kw)
    r = f"link/{LINK_ARGS.index(kw)}"
    assert ours.file_paths == [os.path.join(root, p) for p in recorded.value(k, f"{r}/file_paths")]
    np.testing.assert_array_equal(_batches(ours)[1], k[f"{r}/y"])


PNG_ARGS = [dict(interpolation="bilinear"), dict(interpolation="nearest"), dict(interpolation="bicubic"),
            dict(interpolation="area"), dict(interpolation="lanczos3"), dict(interpolation="mitchellcubic"),
            dict(crop_to_aspect_ratio=True), dict(pad_to_aspect_ratio=True, interpolation="area"),
            dict(color_mode="rgba"), dict(color_mode="grayscale"), dict(interpolation="lanczos5"),
            dict(interpolation="gaussian"), dict(crop_to_aspect_ratio=True, interpolation="bicubic"),
            dict(crop_to_aspect_ratio=True, interpolation="area"),
            dict(pad_to_aspect_ratio=True, interpolation="lanczos3"), dict(pad_to_aspect_ratio=True, interpolation="nearest")]


def _write_pngs(root):
    rng = np.random.default_rng(5)
    os.makedirs(os.path.join(root, "a"))
    for i, (h, w) in enumerate([(9, 31), (40, 17), (12, 15), (5, 6)]):   # down, up, same size, up both
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(os.path.join(root, "a", f"{i}.png"))
    return root


@pytest.mark.parametrize("kw", PNG_ARGS)
def test_png_pixels_match_keras_resize(tmp_path, kw):
    root = _write_pngs(str(tmp_path))
    args = dict(image_size=(12, 15), batch_size=2, shuffle=False, verbose=False, **kw)
    ox, _ = _batches(bf.utils.image_dataset_from_directory(root, **args))
    rx = recorded.load("directory_datasets")[f"png/{PNG_ARGS.index(kw)}/x"]   # Keras: TensorFlow's resize
    # bilinear / nearest: TensorFlow's arithmetic; the others: its weights, summed in another order
    tol = 0 if kw.get("interpolation", "bilinear") in ("bilinear", "nearest") else 1e-3
    if kw.get("color_mode") == "grayscale":
        tol = 1.01   # libpng's and Pillow's RGB -> gray rounding
    np.testing.assert_allclose(ox, rx, atol=tol)


TEXT_ARGS = [dict(shuffle=False, max_length=20), dict(seed=7, validation_split=0.3, subset="validation")]


def _write_texts(root):
    for c, n in (("neg", 3), ("pos", 4)):
        os.makedirs(os.path.join(root, c))
        for i in range(n):
            with open(os.path.join(root, c, f"t{i}.txt"), "w", encoding="utf-8") as f:
                f.write(f"{c} text number {i} " * (i + 1))
        with open(os.path.join(root, c, "skip.md"), "w") as f:
            f.write("not a .txt")
    return root


def test_text_dataset_matches_keras(tmp_path):
    root, k = _write_texts(str(tmp_path)), recorded.load("directory_datasets")
    for j, kw in enumerate(TEXT_ARGS):
        ours = bf.utils.text_dataset_from_directory(root, batch_size=3, verbose=False, **kw)
        assert ours.class_names == recorded.value(k, f"text/{j}/class_names") == ["neg", "pos"]
        ox, oy = _batches(ours)
        assert list(ox) == recorded.value(k, f"text/{j}/x")
        np.testing.assert_array_equal(oy, k[f"text/{j}/y"])


def _wav(path, samples, channels=1):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(samples.astype("<i2").tobytes())


AUDIO_ARGS = [dict(), dict(output_sequence_length=60)]   # padded to the batch's longest, or cut / padded to 60


def _write_wavs(root):
    rng = np.random.default_rng(2)
    for c, n in (("no", 3), ("yes", 3)):
        os.makedirs(os.path.join(root, c))
        for i in range(n):
            _wav(os.path.join(root, c, f"a{i}.wav"), rng.integers(-32768, 32767, 50 + 13 * i))
    return root


def test_audio_dataset_matches_keras(tmp_path):
    root, k = _write_wavs(str(tmp_path)), recorded.load("directory_datasets")
    for j, kw in enumerate(AUDIO_ARGS):
        ours = bf.utils.audio_dataset_from_directory(root, batch_size=4, shuffle=False, verbose=False, **kw)
        assert ours.class_names == recorded.value(k, f"audio/{j}/class_names")
        ref = recorded.batches(k, f"audio/{j}")
        assert len(ref) == len(ours)
        for i, (rx, ry) in enumerate(ref):
            ox, oy = ours[i]
            np.testing.assert_array_equal(ox, rx)
            np.testing.assert_array_equal(oy, ry)


def test_a_truncated_image_names_the_file_and_the_batch(tmp_path):
    root = _write_images(str(tmp_path), {"a": 4, "b": 4})
    bad = os.path.join(root, "b", "img0.png")
    with open(bad, "rb") as f:
        head = f.read(60)
    with open(bad, "wb") as f:
        f.write(head)
    ds = bf.utils.image_dataset_from_directory(root, image_size=(8, 8), batch_size=2, shuffle=False, verbose=False,
                                               workers=2)
    m = bf.Sequential([layers.Flatten(input_shape=(8, 8, 3)), layers.Dense(2, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(bf.DataError, match=r"batch 2: cannot read '.*img0\.png'") as ei:
        m.fit(ds, verbose=0)
    assert ei.value.batch_index == 2 and isinstance(ei.value.__cause__, OSError)


def _spoil(path, how):
    if how == "truncated":
        with open(path, "rb") as f:
            head = f.read(60)
    with open(path, "wb") as f:
        f.write(head if how == "truncated" else b"not an image at all")


def test_skip_bad_files_leaves_corrupt_images_out_of_their_batch_with_one_warning_each(tmp_path):
    root = _write_images(str(tmp_path), {"a": 4, "b": 4})
    bad = [os.path.join(root, "b", "img0.png"), os.path.join(root, "b", "img1.jpg")]
    whole = bf.utils.image_dataset_from_directory(root, image_size=(8, 8), batch_size=4, shuffle=False,
                                                  verbose=False)[1][0]   # b's files before two are spoiled
    _spoil(bad[0], "truncated")
    _spoil(bad[1], "garbage")
    ds = bf.utils.image_dataset_from_directory(root, image_size=(8, 8), batch_size=4, shuffle=False, verbose=False,
                                               workers=2, skip_bad_files=True)
    m = bf.Sequential([layers.Flatten(input_shape=(8, 8, 3)), layers.Dense(2, activation="softmax")])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.warns(UserWarning, match="skip_bad_files") as rec:
        h = m.fit(ds, epochs=2, verbose=0)
    said = [str(w.message) for w in rec if "skip_bad_files" in str(w.message)]
    assert len(said) == 2 and all(any(repr(p) in w for w in said) for p in bad)   # once per file, not per epoch
    assert all("left out of batch 1" in w for w in said) and np.isfinite(h.history["loss"]).all()
    assert ds.skipped_files == sorted(bad)
    x, y = ds[1]                                        # b's four files, two of them good
    assert x.shape == (2, 8, 8, 3) and y.tolist() == [1, 1]
    np.testing.assert_array_equal(x, whole[2:])         # img3.bmp, nested/img2.png
    pair = bf.utils.image_dataset_from_directory(root, image_size=(8, 8), batch_size=2, shuffle=False,
                                                 verbose=False, skip_bad_files=True)
    with pytest.raises(bf.DataError, match=r"batch 2: none of its 2 files can be read .*img0\.png.*img1\.jpg"), \
            pytest.warns(UserWarning):
        pair[2]
    with pytest.raises(ValueError, match="skip_bad_files must be True or False, got skip_bad_files='yes'"):
        bf.utils.image_dataset_from_directory(root, skip_bad_files="yes")


def test_skip_bad_files_leaves_a_corrupt_wav_out(tmp_path):
    root = _write_wavs(str(tmp_path))
    _spoil(os.path.join(root, "no", "a1.wav"), "garbage")
    ds = bf.utils.audio_dataset_from_directory(root, batch_size=3, shuffle=False, verbose=False,
                                               skip_bad_files=True)
    with pytest.warns(UserWarning, match=r"cannot read '.*a1\.wav'"):
        x, y = ds[0]
    assert x.shape[0] == 2 and y.tolist() == [0, 0] and ds.skipped_files == [os.path.join(root, "no", "a1.wav")]
    with pytest.raises(bf.DataError, match=r"batch 0: cannot read '.*a1\.wav'"):
        bf.utils.audio_dataset_from_directory(root, batch_size=3, shuffle=False, verbose=False)[0]


def test_an_empty_class_folder_is_named_and_keeps_its_index(tmp_path):
    root = _write_images(str(tmp_path), {"a": 2, "c": 2})
    os.makedirs(os.path.join(root, "b"))
    with pytest.warns(UserWarning, match=r"class folder '.*b' \(class 1, 'b'\) has no files"):
        ds = bf.utils.image_dataset_from_directory(root, image_size=(8, 8), shuffle=False, verbose=False)
    assert ds.class_names == ["a", "b", "c"]
    assert sorted(set(ds[0][1].tolist())) == [0, 2]


def test_a_folder_without_images_is_named(tmp_path):
    os.makedirs(tmp_path / "a")
    (tmp_path / "a" / "readme.txt").write_text("no images here")
    with pytest.raises(ValueError, match=f"No images found in directory {tmp_path}"), \
            pytest.warns(UserWarning, match="has no files of the allowed formats"):
        bf.utils.image_dataset_from_directory(str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="directory must be an existing folder, got directory='/no/such/dir'"):
        bf.utils.image_dataset_from_directory("/no/such/dir")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        bf.utils.image_dataset_from_directory(str(tmp_path), interpolation="cubic")


def _cnn(size):
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Rescaling(1 / 255, input_shape=(size, size, 3)), layers.Conv2D(4, 3, activation="relu"),
                       layers.GlobalAveragePooling2D(), layers.Dense(2, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def test_a_model_trains_from_an_image_folder_with_two_workers(folder):
    train, val = bf.utils.image_dataset_from_directory(folder, image_size=(16, 16), batch_size=4, seed=0,
                                                       validation_split=0.25, subset="both", workers=2,
                                                       labels=[i % 2 for i in range(16)], verbose=False)
    m = _cnn(16)
    h = m.fit(train, validation_data=val, epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all() and len(h.history["val_loss"]) == 2
    assert [e for e in m._last_plan.breakdown if "PyDataset queue" in e.name and "2 workers" in e.name]


LIMIT = 192 << 20   # the child's memory: Python, NumPy and boundfit, BLAS on one thread, the plan, the margin

LIMITED_FIT = """
import resource, sys
import numpy as np, boundfit as bf
from boundfit import layers
from boundfit.runtime import budget
root, size, limit, rlimit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
bf.utils.set_random_seed(0)
m = bf.Sequential([layers.AveragePooling2D(8, input_shape=(size, size, 3)), layers.Rescaling(1 / 255),
                   layers.Conv2D(4, 3, activation="relu"), layers.GlobalAveragePooling2D(),
                   layers.Dense(2, activation="softmax")])
m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
m.estimate_memory(4)   # the BLAS runtime brought up (held memory) before the growth is measured
ds = bf.utils.image_dataset_from_directory(root, image_size=(size, size), batch_size=4, seed=0, verbose=False,
                                           workers=2, max_queue_size=2)
if rlimit:   # no cgroup: the address space may grow by the limit, which is also fit's budget
    vm = [int(l.split()[1]) << 10 for l in open("/proc/self/status") if l.startswith("VmSize")][0]
    resource.setrlimit(resource.RLIMIT_AS, (vm + limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
open("/proc/self/clear_refs", "w").write("5")   # peak RSS := RSS now
r0 = budget.process_usage_bytes()
h = m.fit(ds, epochs=1, verbose=0, memory_limit=limit if rlimit else None)
p = m._last_plan
print("FIT", h.history["loss"][0], p.fits, p.host_bytes - p.held_bytes, budget.peak_rss_bytes() - r0)
"""


def _run_limited(args, limit):
    """LIMITED_FIT in a child Python inside a memory cgroup of `limit` bytes, or, where no cgroup can be made,
    under RLIMIT_AS: (stdout, how)."""
    with contextlib.ExitStack() as stack:
        try:
            cg = stack.enter_context(memory_cgroup(limit))
        except pytest.skip.Exception:
            cg = None
        argv = ["-c", LIMITED_FIT] + [str(a) for a in args] + [str(limit), "0" if cg else "1"]
        if cg is not None:
            p = cg.popen([sys.executable] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        else:   # glibc's per-thread arenas reserve 64 MiB of address space each
            p = subprocess.Popen([sys.executable] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, MALLOC_ARENA_MAX="2"))
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and (cg is None or not cg.oom_killed()), err[-3000:]
        return out, "cgroup" if cg else "RLIMIT_AS"


@pytest.mark.cgroup
def test_a_folder_three_times_a_memory_limit_trains_inside_it_the_first_fit_growing_within_its_plan(tmp_path):
    """768 PNG files of 256 x 256 (16 images, written again under other names): 576 MiB as float32, as loading
    them would hold; the child, limited to 192 MiB, reads them per batch."""
    root, size = str(tmp_path), 256
    n = -(-3 * LIMIT // (size * size * 3 * 4))
    rng = np.random.default_rng(3)
    blobs = []
    for _ in range(16):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(buf, "png", compress_level=1)
        blobs.append(buf.getvalue())
    for c in "ab":
        os.makedirs(os.path.join(root, c))
    for i in range(n):
        with open(os.path.join(root, "ab"[i % 2], f"{i}.png"), "wb") as f:
            f.write(blobs[i % 16])
    assert n * size * size * 3 * 4 >= 3 * LIMIT
    out, how = _run_limited((root, size), LIMIT)
    loss, fits, new, grown = out.split("FIT")[1].split()
    assert np.isfinite(float(loss)) and fits == "True", out
    assert int(grown) <= int(new), f"{how}: the first fit grew {grown} bytes, its plan says {new} new"
