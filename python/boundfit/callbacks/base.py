"""Callback, CallbackList, History, ProgbarLogger, LambdaCallback (Keras 3 names).

Batch hooks: when some callback overrides a batch hook (on_train_batch_begin /
_end, on_test_batch_*, on_predict_batch_*, or the on_batch_* aliases), the
loop runs one step at a time and calls it once per batch. When none does, the
engine runs chunks of steps with the GIL released and only the built-in
callbacks (History, ProgbarLogger: `_chunk_hooks = True`) see the chunk ends."""

from .progbar import Progbar

_BATCH_HOOKS = {
    "train": ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end"),
    "test": ("on_test_batch_begin", "on_test_batch_end"),
    "predict": ("on_predict_batch_begin", "on_predict_batch_end"),
}


class Callback:
    """Keras 3's `Callback`: override on_epoch_end, on_train_batch_end, ...; batch hooks make the run return to Python
    every batch."""
    _chunk_hooks = False  # True: its batch hooks may be called once per chunk of steps

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): self.on_batch_begin(batch, logs=logs)
    def on_train_batch_end(self, batch, logs=None): self.on_batch_end(batch, logs=logs)
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass
    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass


def overrides(cb, hook):
    """Whether callback cb implements hook itself (a subclass method or an attribute set on it)."""
    if hook in vars(cb):
        return True
    return getattr(type(cb), hook, None) is not getattr(Callback, hook)


class History(Callback):
    """Per-epoch logs: history.history['loss'], ['accuracy'], ['val_loss'], ..."""
    _chunk_hooks = True

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


class ProgbarLogger(Callback):
    """Prints the Keras progress bar; fit adds one when verbose and none is given."""
    _chunk_hooks = True

    def __init__(self, count_mode=None):
        super().__init__()
        self.verbose, self.epochs, self.target, self._bar = 1, 1, None, None

    def set_params(self, params):
        super().set_params(params)
        self.verbose = params.get("verbose", 1)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose:
            print(f"Epoch {epoch + 1}/{self.epochs}")
        self._bar = Progbar(self.target, width=30, verbose=self.verbose, interval=0, plan=getattr(self.model, "_last_plan", None))

    def on_train_batch_end(self, batch, logs=None):
        if self._bar is not None:
            self._bar.update(batch + 1, logs, finalize=False)

    def on_epoch_end(self, epoch, logs=None):
        if self._bar is not None:
            self._bar.update(self.target, logs, finalize=True)
            self._bar = None


class LambdaCallback(Callback):
    """Callback from plain functions: on_epoch_end=lambda epoch, logs: ..., and so on."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in hooks.items():
            if not hasattr(Callback, name):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}")
            if fn is not None:
                setattr(self, name, fn)


class CallbackList:
    """Calls a hook on every callback in order; tells the loop whether batch
    hooks need one step at a time."""

    def __init__(self, callbacks, model, params, add_history=False, add_progbar=False):
        self.callbacks = list(callbacks or [])
        if add_history and not any(isinstance(c, History) for c in self.callbacks):
            self.callbacks.append(History())  # last, as Keras: it records what others add to logs
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.insert(0, ProgbarLogger())
        for c in self.callbacks:
            if not isinstance(c, Callback):
                raise TypeError(f"callbacks: expected boundfit.callbacks.Callback objects, got {type(c).__name__}")
            c.set_model(model)
            c.set_params(params)

    @property
    def history(self):
        return next((c for c in self.callbacks if isinstance(c, History)), None)

    def per_batch(self, mode):
        """True when a callback overrides a batch hook of mode ('train', 'test', 'predict')."""
        return any(not c._chunk_hooks and any(overrides(c, h) for h in _BATCH_HOOKS[mode]) for c in self.callbacks)

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def call(*args, logs=None):
            for c in self.callbacks:
                getattr(c, hook)(*args, logs)   # positional, as Keras calls them
        return call
