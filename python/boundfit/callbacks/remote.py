"""RemoteMonitor (each epoch's logs POSTed to a server, as Keras 3 sends them; through urllib, so without the
`requests` package Keras needs) and the callbacks of other backends' writers, refused by name."""

import json
import urllib.error
import urllib.parse
import urllib.request
import warnings

import numpy as np

from ..refusal import refused
from .base import Callback


class RemoteMonitor(Callback):
    """Keras 3's `RemoteMonitor(root, path, field, headers, send_as_json)`: at each epoch's end, {"epoch": epoch,
    **logs} is POSTed to root + path, as JSON (send_as_json) or as a form whose `field` holds the JSON; a server
    that cannot be reached is a warning, not an error (as Keras)."""

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data", headers=None,
                 send_as_json=False, timeout=10.0):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json, self.timeout = headers, send_as_json, timeout

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for k, v in (logs or {}).items():
            send[k] = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(self.root + self.path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                reply.read()
        except (urllib.error.URLError, OSError, ValueError):
            warnings.warn(f"Could not reach RemoteMonitor root server at {self.root}", stacklevel=2)


TensorBoard = refused("keras.callbacks.TensorBoard",
                      "its event files are written by TensorFlow's summary writer. Log with CSVLogger (or read "
                      "model.fit's History) and plot the columns")
OrbaxCheckpoint = refused("keras.callbacks.OrbaxCheckpoint",
                          "Orbax is JAX's checkpoint library. Use ModelCheckpoint or BackupAndRestore")
