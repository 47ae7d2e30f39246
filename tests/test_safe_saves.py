"""Saves (`.keras`, `.weights.h5`, boundfit's graph file, checkpoints: all
through saving/atomic_write.py) behave as Keras's open(path, "wb") where it
has an answer: through a symlink they write its target and keep the link,
they keep the replaced file's mode, a new file gets 0666 less the umask.
And they stay atomic: a save killed mid-write leaves a temporary file that
the next save in that folder removes (never one of a live process), and a
file size limit (EFBIG) raises its OSError, the previous file kept."""

import errno
import json
import os
import signal
import subprocess
import sys

import pytest

import boundfit as bf
from boundfit import layers as L
from boundfit.saving import atomic_write as aw

import keras_ref


def _sequential():
    m = bf.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(2)])
    m.compile(optimizer="adam", loss="mse")
    return m


def _functional():
    x = bf.Input((3,), name="x")
    m = bf.Model(x, L.Dense(2, name="d")(L.Dense(4, name="h")(x)))
    m.compile(optimizer="adam", loss="mse")
    return m


# (file name, save, load): a .keras file, a weights file, boundfit's graph file
SAVES = {
    "keras": ("m.keras", lambda m, p: m.save(p), bf.models.load_model),
    "weights": ("m.weights.h5", lambda m, p: m.save_weights(p), lambda p: _functional().load_weights(p)),
    "graph": ("m.npz", lambda m, p: m.save(p), bf.models.load_model),
}


def _temps(folder):
    return [n for n in os.listdir(folder) if n.endswith(".tmp")]


@pytest.mark.parametrize("what", sorted(SAVES))
def test_save_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path, what):
    name, save, load = SAVES[what]
    (tmp_path / "real").mkdir()
    target, link = tmp_path / "real" / name, tmp_path / name
    link.symlink_to(os.path.join("real", name))
    save(_functional(), link)
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", name)
    assert target.is_file() and not target.is_symlink()
    load(target)
    assert _temps(tmp_path) == [] and _temps(tmp_path / "real") == []


@pytest.mark.parametrize("what", sorted(SAVES))
def test_save_keeps_the_replaced_files_mode(tmp_path, what):
    name, save, _ = SAVES[what]
    path = tmp_path / name
    save(_functional(), path)
    path.chmod(0o640)
    save(_functional(), path)
    assert path.stat().st_mode & 0o7777 == 0o640


def test_a_new_file_gets_0666_less_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        _sequential().save(tmp_path / "m.keras")
    finally:
        os.umask(old)
    assert (tmp_path / "m.keras").stat().st_mode & 0o7777 == 0o640


def test_keras_writes_a_symlinks_target_keeping_its_mode_as_boundfit_does(tmp_path):
    keras = keras_ref.load()
    for who, model in (("keras", keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])),
                       ("boundfit", _sequential())):
        (tmp_path / who).mkdir()
        target, link = tmp_path / who / "target.keras", tmp_path / who / "link.keras"
        target.write_bytes(b"old")
        target.chmod(0o640)
        link.symlink_to("target.keras")
        model.save(link)
        assert link.is_symlink() and target.stat().st_mode & 0o7777 == 0o640, who
        assert target.stat().st_size > 3, who


def test_a_symlink_loop_is_refused_as_an_oserror(tmp_path):
    a, b = tmp_path / "a.keras", tmp_path / "b.keras"
    a.symlink_to("b.keras")
    b.symlink_to("a.keras")
    with pytest.raises(OSError) as e:
        _sequential().save(a)
    assert e.value.errno == errno.ELOOP and e.value.filename == str(a)
    assert os.readlink(a) == "b.keras" and os.readlink(b) == "a.keras" and _temps(tmp_path) == []


_KILLED_MID_WRITE = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("aw", {module!r})
aw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(aw)

def write(f):
    f.write(b"half a model")
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
aw.atomic_write(sys.argv[1], write)
"""


def test_a_save_killed_mid_write_leaves_a_temporary_file_the_next_save_removes(tmp_path):
    path = tmp_path / "m.keras"
    _sequential().save(path)
    before = path.read_bytes()
    child = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE.format(module=aw.__file__), str(path)],
                           timeout=120)
    assert child.returncode == -signal.SIGKILL
    left = _temps(tmp_path)
    assert len(left) == 1 and aw._TEMP.fullmatch(left[0]) and path.read_bytes() == before
    _sequential().save_weights(tmp_path / "other.weights.h5")   # any save in that folder
    assert _temps(tmp_path) == [] and path.read_bytes() == before


def test_only_temporary_files_of_dead_processes_of_this_host_are_removed(tmp_path):
    space, boot = aw._marks()
    with open("/proc/sys/kernel/pid_max") as f:
        no_pid = int(f.read()) + 1   # a pid no process can have
    other_space = "0" * 8 if space != "0" * 8 else "1" * 8
    other_boot = "0" * 8 if boot != "0" * 8 else "1" * 8
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        names = {
            f".m.keras.bf{space}-{boot}-{os.getpid()}-00000001.tmp": True,     # this process: kept
            f".m.keras.bf{space}-{boot}-{live.pid}-00000002.tmp": True,        # another live process: kept
            f".m.keras.bf{space}-{boot}-{no_pid}-00000003.tmp": False,         # its process is gone
            f".m.keras.bf{space}-{other_boot}-{os.getpid()}-00000004.tmp": False,  # an earlier boot's
            f".m.keras.bf{other_space}-{boot}-{no_pid}-00000005.tmp": True,    # another host or PID namespace
            ".m.keras.k2j4h5.tmp": True,                                       # not a save's
            "notes.tmp": True,
        }
        for n in names:
            (tmp_path / n).write_bytes(b"x")
        (tmp_path / f".d.keras.bf{space}-{boot}-{no_pid}-00000006.tmp").mkdir()   # a folder: kept
        removed = aw.remove_stale_temps(tmp_path)
    finally:
        live.stdin.close()
        live.wait(timeout=60)
    assert sorted(removed) == sorted(n for n, keep in names.items() if not keep)
    assert sorted(os.listdir(tmp_path)) == sorted([n for n, keep in names.items() if keep] +
                                                  [f".d.keras.bf{space}-{boot}-{no_pid}-00000006.tmp"])


_FILE_SIZE_LIMIT = """
import json, os, resource, signal, sys
import boundfit as bf
from boundfit import layers as L
from boundfit.saving.atomic_write import atomic_write

def model():
    x = bf.Input((64,), name="x")
    m = bf.Model(x, L.Dense(2, name="d")(L.Dense(64, name="h")(x)))
    m.compile(optimizer="adam", loss="mse")
    return m

folder = sys.argv[1]
paths = [os.path.join(folder, n) for n in ("m.keras", "m.weights.h5", "m.npz")]
saves = [lambda m, p: m.save(p), lambda m, p: m.save_weights(p), lambda m, p: m.save(p)]
for p, save in zip(paths, saves):
    save(model(), p)
before = [open(p, "rb").read() for p in paths]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

def swallowing(f):   # a writer that hides its write error
    try:
        f.write(bytes(20000))
        f.flush()
    except OSError:
        pass

out = []
for p, save in [*zip(paths, saves), (os.path.join(folder, "s.bin"), lambda m, p: atomic_write(p, swallowing))]:
    try:
        save(model(), p)
        out.append(["saved"])
    except Exception as e:
        out.append([type(e).__name__, getattr(e, "errno", None)])
out.append([open(p, "rb").read() == b for p, b in zip(paths, before)])
out.append(sorted(os.listdir(folder)))
print(json.dumps(out))
"""


def test_a_file_size_limit_raises_its_oserror_and_keeps_the_previous_file(tmp_path):
    child = subprocess.run([sys.executable, "-c", _FILE_SIZE_LIMIT, str(tmp_path)], capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr
    *errors, kept, names = json.loads(child.stdout.strip().splitlines()[-1])
    assert errors == [["OSError", errno.EFBIG]] * 4   # .keras, .weights.h5, .npz, a writer that swallowed it
    assert kept == [True, True, True]
    assert names == ["m.keras", "m.npz", "m.weights.h5"]   # no temporary file, no s.bin
