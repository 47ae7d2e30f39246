"""pytest runs in forks of one process that has already imported pytest, its
plugins, numpy and boundfit (a fork server): the emulated CUDA runs of
test_cuda_sim.py and test_cuda_mutants.py are a dozen pytest processes, and
starting one (the interpreter, pytest and its plugins, boundfit's import) was
2-4 CPU-s of each. A run is a fresh fork with the environment and arguments
it is given, its own pytest session, conftest and test modules, and exits
as a `python -m pytest` process would (its atexit handlers run). The server
imports nothing that reads the run's environment: the CUDA module
(BF_CUDA_LIB, BF_SIM_*) loads at a run's first device use, after the fork.
One server per test process, started at its first run, ends with it."""

import os
import subprocess
import sys
import tempfile

_SERVER = r'''
import atexit, importlib, importlib.metadata, json, os, sys, traceback
import _pytest.config, pytest, numpy, boundfit  # noqa: F401
for name in _pytest.config.default_plugins:
    importlib.import_module("_pytest." + name)
for ep in importlib.metadata.entry_points(group="pytest11"):
    try:
        importlib.import_module(ep.module)
    except Exception:
        pass   # a plugin that fails here fails the run as it would fail a fresh process
print("ready", flush=True)
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.environ.clear()
            os.environ.update(req["env"])
            os.chdir(req["cwd"])
            sys.path[0] = req["cwd"]   # python -m pytest's first path entry
            null, out = os.open(os.devnull, os.O_RDONLY), os.open(req["out"], os.O_WRONLY | os.O_TRUNC)
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            code = int(pytest.main(req["args"]))
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                atexit._run_exitfuncs()
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    print(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)
'''

_server = None


def _start(cwd):
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=cwd, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        ready = _server.stdout.readline()
        assert ready == "ready\n", f"the pytest fork server did not start: {ready!r}"
    return _server


def run(args, cwd, env):
    """`python -m pytest *args` in cwd with environment env, as a fork of the server: a CompletedProcess whose
    stdout holds the run's stdout and stderr"""
    import json
    server = _start(cwd)
    # the server imported the plugins before this run's pytest could mark them for assertion rewriting (their
    # asserts keep their plain messages)
    args = ["-W", "ignore::pytest.PytestAssertRewriteWarning", *args]
    with tempfile.NamedTemporaryFile("r", prefix="pytest-fork-", suffix=".out") as out:
        server.stdin.write(json.dumps(dict(args=list(args), cwd=cwd, env=dict(env), out=out.name)) + "\n")
        server.stdin.flush()
        reply = server.stdout.readline()
        assert reply, "the pytest fork server died"
        return subprocess.CompletedProcess(["pytest", *args], json.loads(reply), out.read(), "")
