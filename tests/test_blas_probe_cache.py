"""The BLAS probe's second round, which only proves the first settled the
buffers, is skipped in a later process whose first round grows RSS as much
as a proven one did (runtime/blas_verified.py); anything else probes until
settled as before. The probe and RSS are stand-ins here: growth per round is
scripted."""

import os

import pytest

from boundfit.runtime import blas_runtime, blas_verified

MIB = 1 << 20


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    """rounds(growths): the probe's RSS growth per round (bytes, a round being every probe shape once)"""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    state = {"rss": 100 * MIB, "calls": 0, "growths": []}

    def probe(m, n, k):
        state["calls"] += 1
        if state["calls"] % len(blas_runtime._PROBES) == 0:   # a round ends
            g = state["growths"].pop(0) if state["growths"] else 0
            state["rss"] += g

    monkeypatch.setattr(blas_runtime._core, "blas_probe", probe)
    monkeypatch.setattr(blas_runtime, "_rss", lambda: state["rss"])

    def rounds(growths):
        state["growths"], state["calls"] = list(growths), 0
        grown = blas_runtime._probe_until_settled()
        return grown, blas_runtime._state["rounds"]
    return rounds


def test_a_first_round_proven_settled_is_kept_and_a_later_equal_one_skips_the_proof(scripted):
    assert scripted([64 * MIB, 0]) == (64 * MIB, 2)     # no record: the second round proves it
    assert blas_verified.load(blas_runtime._probe_key()) == 64 * MIB
    assert scripted([64 * MIB, 0]) == (64 * MIB, 1)     # the same first round: settled, as proven before


def test_a_first_round_unlike_the_proven_one_probes_until_settled(scripted):
    scripted([64 * MIB, 0])
    assert scripted([40 * MIB, 24 * MIB, 0]) == (64 * MIB, 3)   # it grew less: the buffers were not all up
    assert scripted([64 * MIB + (1 << 20), 0]) == (65 * MIB, 2)  # more than 64 KiB apart is another state


def test_a_round_that_keeps_growing_is_not_recorded(scripted):
    assert scripted([30 * MIB, 20 * MIB, 10 * MIB, 0]) == (60 * MIB, 4)
    assert blas_verified.load(blas_runtime._probe_key()) is None


def test_a_corrupt_record_only_costs_the_second_round(scripted):
    path = blas_verified._path()
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("{not json")
    assert scripted([64 * MIB, 0]) == (64 * MIB, 2)
    assert scripted([64 * MIB, 0]) == (64 * MIB, 1)   # rewritten whole


def test_a_cache_folder_that_cannot_be_made_only_costs_the_second_round(scripted, monkeypatch, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))   # a file where the folder would be: no record kept
    assert scripted([64 * MIB, 0]) == (64 * MIB, 2)
    assert scripted([64 * MIB, 0]) == (64 * MIB, 2)


def test_a_round_from_another_starting_state_is_kept_apart(scripted, monkeypatch):
    monkeypatch.setitem(blas_runtime._state, "threads", 0)
    scripted([64 * MIB, 0])                                  # two threads brought up from none, proven
    monkeypatch.setitem(blas_runtime._state, "threads", 1)   # a raise from one thread: another key
    assert scripted([64 * MIB, 0]) == (64 * MIB, 2)
