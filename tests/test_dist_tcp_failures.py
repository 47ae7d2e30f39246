"""The TCP transport's rendezvous (csrc/core/dist_tcp.c) against unlucky and
hostile peers (issue 31): a WORLD_SIZE mismatch is refused on both sides and
closes every socket, so a corrected retry in the same process joins on the
same port (a second rank 0 is told the port is taken); silent connections
to MASTER_PORT delay no rank and are dropped after their own timeout (or
when 64 newer ones wait); at the deadline rank 0 names exactly the ranks that
never said hello, and every connection it refused (garbage, a wrong
WORLD_SIZE, a rank taken twice, a hello cut short, a rank that left), and the
joined ranks name the missing one.
The ranks are tests/dist_programs/rendezvous.py, driven line by line: the
order of events is the test's, not the scheduler's. Waits on a rank are hang
guards only; a rendezvous deadline is short only where the test is about it."""
import json
import os
import queue
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

PROGRAM = os.path.join(os.path.dirname(__file__), "dist_programs", "rendezvous.py")
GUARD = 120.0    # hang guard of every wait (the rendezvous deadlines below are 2 to 60 s)
DEADLINE = 2     # rank 0's deadline, in the tests about the deadline
HELLO = "=Iiii64s"   # dist_tcp.c's hello: magic "bfDT", rank, world size, pid, host
FRAME = "=IIq"       # and its frame header: magic, kind, argument
MAGIC, K_REFUSED = 0x62664454, 4


class Rank:
    """One rank's process: `ready` once imported; say() a command, hear() its JSON answer."""

    def __init__(self, rank, port):
        env = {k: v for k, v in os.environ.items()
               if "PMI" not in k and "HYDRA" not in k and not k.startswith(("KERAS_DISTRIBUTION", "WORLD_SIZE"))}
        env.update(RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   BF_DIST_THREADS="1")
        self.p = subprocess.Popen([sys.executable, PROGRAM], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        self.lines, self.log = queue.Queue(), []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def hear(self):
        while True:
            line = self.lines.get(timeout=GUARD)
            assert line is not None, "the rank exited:\n" + "".join(self.log)
            if line.startswith("{"):
                return json.loads(line)
            if line.strip() == "ready":
                return "ready"
            self.log.append(line)

    def say(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=GUARD)


@pytest.fixture
def ranks():
    """start(rank, port) -> a ready Rank; every one is ended after the test."""
    started = []

    def start(*args):
        started.append(Rank(*args))
        return started[-1]

    yield start
    for r in started:
        r.close()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connect(port):
    """A raw connection to rank 0 once it listens."""
    t_end = time.monotonic() + GUARD
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        except ConnectionRefusedError:
            assert time.monotonic() < t_end, f"rank 0 never listened on port {port}"
            time.sleep(0.02)


def _closed_by_peer(sock):
    """True once the other end closed (read until EOF; hang-guarded)."""
    while True:
        try:
            if not sock.recv(4096):
                return True
        except ConnectionResetError:
            return True


def _frame(sock):
    return struct.unpack(FRAME, sock.recv(struct.calcsize(FRAME), socket.MSG_WAITALL))


def _start_all(ranks, n, port):
    procs = [ranks(r, port) for r in range(n)]
    assert [p.hear() for p in procs] == ["ready"] * n
    return procs


def _together(procs, cmd):
    """Every rank runs a collective command (fit: train an epoch; sum: an all-reduce)."""
    for p in procs:
        p.say(cmd)
    n = len(procs)
    for p in procs:
        got = p.hear()
        assert got["sum"] == n * (n + 1) / 2 and got.get("loss", 1) > 0, got


def test_world_size_mismatch_is_refused_and_a_corrected_retry_joins_on_the_same_port(ranks):
    port = _free_port()
    r0, r1 = _start_all(ranks, 2, port)
    r1.say("init 2 60")            # connects as soon as rank 0 listens
    r0.say(f"init 3 {DEADLINE}")   # rank 0 with the wrong WORLD_SIZE
    e1 = r1.hear()["error"]
    assert "rank 0 refused this process (RANK=1 WORLD_SIZE=2): its group has WORLD_SIZE=3" in e1, e1
    e0 = r0.hear()["error"]
    assert "ranks 1 2 (of WORLD_SIZE=3) did not join within 2.0 s" in e0, e0
    assert "said RANK=1 WORLD_SIZE=2, but this group has WORLD_SIZE=3" in e0, e0
    with pytest.raises(ConnectionRefusedError):   # the listener is closed
        socket.create_connection(("127.0.0.1", port), timeout=GUARD).close()
    r0.say("init 2 60")
    r1.say("init 2 60")
    assert r0.hear() == {"ok": True, "rank": 0, "size": 2}
    assert r1.hear() == {"ok": True, "rank": 1, "size": 2}
    _together([r0, r1], "sum")


def test_silent_connections_are_dropped_and_do_not_stop_the_job_from_training(ranks):
    port = _free_port()
    r0, r1 = _start_all(ranks, 2, port)
    r0.say("init 2 60")
    first = _connect(port)           # before any rank: says nothing
    r1.say("init 2 60 0")            # a second rank 0 meanwhile: the port is taken
    assert r1.hear() == {"error": f"distributed: rank 0 cannot listen at MASTER_ADDR=127.0.0.1 MASTER_PORT={port}: "
                                  "Address already in use"}
    assert _closed_by_peer(first)    # dropped after its 5 s while rank 0 still waits
    flood = [_connect(port) for _ in range(65)]   # one more than rank 0 holds pending: the oldest goes
    assert _closed_by_peer(flood[0])
    r1.say("init 2 60")
    assert [r.hear() for r in (r0, r1)] == [{"ok": True, "rank": i, "size": 2} for i in range(2)]
    assert all(_closed_by_peer(s) for s in flood[1:])   # still silent when the group formed
    _together([r0, r1], "fit")
    for s in [first] + flood:
        s.close()


def test_at_the_deadline_every_rank_names_exactly_the_rank_that_never_said_hello(ranks):
    port = _free_port()
    r0, r1 = _start_all(ranks, 2, port)   # of 3: rank 2 never starts
    r0.say(f"init 3 {DEADLINE}")
    silent = _connect(port)   # first and silent: read in turn, it would hold rank 1 up 5 s, past the deadline
    r1.say("init 3 60")
    e0 = r0.hear()["error"]
    assert f"rank 0 at 127.0.0.1:{port}: rank 2 (of WORLD_SIZE=3) did not join within 2.0 s" in e0, e0
    assert f"127.0.0.1:{silent.getsockname()[1]} sent 0 of 80 hello bytes" in e0, e0
    e1 = r1.hear()["error"]
    assert "rank 1 of 3: rank 0 gave up during the exchange of hosts: rank 2 never joined" in e1, e1
    assert _closed_by_peer(silent)
    silent.close()


def test_garbage_and_wrong_hellos_are_refused_naming_the_peer(ranks):
    port = _free_port()
    (r0,) = _start_all(ranks, 1, port)
    r0.say(f"init 4 {DEADLINE}")
    garbage = _connect(port)
    garbage.sendall(b"GET / HTTP/1.1\r\n\r\n")
    wrong = _connect(port)
    wrong.sendall(struct.pack(HELLO, MAGIC, 1, 7, 4242, b"elsewhere"))
    twice = [_connect(port) for _ in range(2)]   # both say rank 2: one joins, the other is refused
    for s in twice:
        s.sendall(struct.pack(HELLO, MAGIC, 2, 4, 4243, b"twin"))
    half = _connect(port)   # a hello cut short
    half.sendall(struct.pack(HELLO, MAGIC, 1, 4, 4244, b"half")[:10])
    half_port = half.getsockname()[1]
    half.close()
    leaver = _connect(port)   # rank 3 joins, then goes before the group is complete
    leaver.sendall(struct.pack(HELLO, MAGIC, 3, 4, 4245, b"leaver"))
    leaver.close()
    e0 = r0.hear()["error"]
    assert "ranks 1 3 (of WORLD_SIZE=4) did not join" in e0, e0
    assert f"127.0.0.1:{garbage.getsockname()[1]} is not a boundfit rank" in e0, e0
    assert (f"127.0.0.1:{wrong.getsockname()[1]} (host elsewhere, pid 4242) said RANK=1 WORLD_SIZE=7, "
            "but this group has WORLD_SIZE=4") in e0, e0
    assert e0.count("(host twin, pid 4243) said RANK=2, but rank 2 already joined") == 1, e0
    assert f"127.0.0.1:{half_port} closed after 10 of 80 hello bytes" in e0, e0
    assert "rank 3 (host leaver) left before every rank joined" in e0, e0
    assert _frame(wrong) == (MAGIC, K_REFUSED, 4)   # told why: the group's WORLD_SIZE
    refused = [s for s in twice if f":{s.getsockname()[1]} (host twin" in e0]
    assert len(refused) == 1 and _frame(refused[0]) == (MAGIC, K_REFUSED, -1)   # -1: the rank is taken
    for s in [garbage, wrong] + twice:
        assert _closed_by_peer(s)
        s.close()
