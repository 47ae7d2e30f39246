"""Keras names boundfit refuses by name (another backend's or framework's objects, quantization, model
parallelism, Keras's symbolic machinery): making one raises NotImplementedError saying why and what to use, and
the coverage tool lists them as refused; RemoteMonitor POSTs each epoch's logs as Keras sends them (a local HTTP
server); keras.device scopes the default device."""

import http.server
import json
import threading
import urllib.parse

import numpy as np
import pytest

import boundfit as bf

REFUSED = ["Function", "Operation", "StatelessScope", "SymbolicScope", "RematScope", "Quantizer",
           "name_scope", "remat", "callbacks.TensorBoard", "callbacks.OrbaxCheckpoint", "optimizers.MultiOptimizer",
           "optimizers.OptimizerMap", "saving.KerasFileEditor", "layers.FlaxLayer", "layers.JaxLayer",
           "layers.TorchModuleWrapper", "layers.TFSMLayer", "dtype_policies.DTypePolicyMap",
           "dtype_policies.QuantizedDTypePolicy", "dtype_policies.Int4DTypePolicy", "distribution.ModelParallel"]


@pytest.mark.parametrize("path", REFUSED)
def test_refused_names_raise_saying_what_to_use(path):
    obj = bf
    for part in path.split("."):
        obj = getattr(obj, part)
    assert obj._boundfit_refused
    with pytest.raises(NotImplementedError, match=r"is not supported by boundfit: \S+"):
        obj("x")


class _Server(http.server.BaseHTTPRequestHandler):
    posts = []

    def do_POST(self):   # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Server.posts.append((self.path, self.headers["Content-Type"], self.headers.get("X-Run"), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Server.posts = []
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Server)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("as_json", [False, True])
def test_remote_monitor_posts_each_epochs_logs_as_keras(server, as_json):
    m = bf.Sequential([bf.Input((3,)), bf.layers.Dense(1)])
    m.compile("sgd", "mse", metrics=["mae"])
    x = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
    cb = bf.callbacks.RemoteMonitor(root=server, path="/epochs/", field="payload", headers={"X-Run": "r1"},
                                    send_as_json=as_json)
    h = m.fit(x, x[:, :1], epochs=2, verbose=0, callbacks=[cb])
    assert len(_Server.posts) == 2
    for epoch, (path, ctype, run, body) in enumerate(_Server.posts):
        sent = json.loads(body) if as_json else json.loads(urllib.parse.parse_qs(body.decode())["payload"][0])
        assert (path, run) == ("/epochs/", "r1") and ctype.startswith("application/json" if as_json else
                                                                     "application/x-www-form-urlencoded")
        assert sent == {"epoch": epoch, "loss": pytest.approx(h.history["loss"][epoch]),
                        "mae": pytest.approx(h.history["mae"][epoch])}


def test_remote_monitor_unreachable_server_warns():
    cb = bf.callbacks.RemoteMonitor(root="http://127.0.0.1:9", timeout=2)
    with pytest.warns(UserWarning, match="Could not reach RemoteMonitor root server"):
        cb.on_epoch_end(0, {"loss": np.float32(1.5)})


def test_keras_device_scopes_the_default_device():
    from boundfit.runtime import devices
    assert devices.resolve(None) == "cpu"
    with bf.device("gpu:1"):
        assert devices.resolve(None) == "cuda:1"
        with bf.device("cpu:0"):
            assert devices.resolve(None) == "cpu"
        assert devices.resolve(None) == "cuda:1"
    assert devices.resolve(None) == "cpu"
    with pytest.raises(ValueError, match="device must be"):
        with bf.device("tpu:0"):
            pass
