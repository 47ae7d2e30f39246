"""Sequential: the Keras model API over the engine (boundfit._core.Model).
Weights live in the engine's host arena; this class describes and reports."""



import numpy as np

from . import _core, activations, layers as layers_mod, losses, metrics as metrics_mod, optimizers, utils


class Sequential:
    def __init__(self, layers=None, name=None):
        self.name = name or "sequential"
        self._layers, self._input_shape = [], None
        self._engine = None
        self.optimizer = self.loss = None
        self.compiled_metrics = []
        self._metrics_arg = self._weighted_metrics_arg = None
        self._metric_objs = []
        self.stop_training = False
        self.history = None
        self._device = None
        for layer in layers or []:
            self.add(layer)

    # ---- structure ----
    def add(self, layer):
        if isinstance(layer, layers_mod.InputLayer):
            if self._layers:
                raise ValueError("Input must come first in a Sequential model")
            self._input_shape = layer.shape
            return
        if not isinstance(layer, layers_mod.Layer):
            raise TypeError(f"Sequential.add: expected a boundfit layer, got {type(layer).__name__}")
        if not self._layers and self._input_shape is None and layer.input_shape_arg is not None:
            self._input_shape = layer.input_shape_arg
        self._layers.append(layer)
        self._engine = None
        if self._input_shape is not None:
            self.build()

    @property
    def layers(self):
        return list(self._layers)

    @property
    def built(self):
        return self._engine is not None

    def build(self, input_shape=None):
        if input_shape is not None:
            self._input_shape = tuple(input_shape)[1:] if len(tuple(input_shape)) > 1 and tuple(input_shape)[0] is None \
                else tuple(input_shape)
        if self._input_shape is None:
            raise ValueError("the model has no input shape: pass input_shape= to the first layer or use layers.Input")
        if not self._layers:
            raise ValueError("the model has no layers")
        old = self._engine
        self._engine = _core.Model([l.spec() for l in self._layers], tuple(int(d) for d in self._input_shape),
                                   utils.next_seed())
        for i, l in enumerate(self._layers):
            l._model, l._index = self, i
        if old is not None and self.optimizer is not None:
            self._compile_engine()

    def _require_built(self, x=None):
        if self._engine is None:
            if x is None:
                raise ValueError("the model is not built: give the first layer input_shape= or call build()")
            self._input_shape = tuple(np.shape(x)[1:])
            self.build()

    @property
    def input_shape(self):
        return (None,) + tuple(self._input_shape) if self._input_shape is not None else None

    @property
    def output_shape(self):
        return (None,) + tuple(self._engine.output_shape) if self._engine is not None else None

    def _info(self):
        return self._engine.layers_info()

    def _layer_output_shape(self, i):
        return (None,) + tuple(self._info()[i][1])

    def _param_slices(self):
        out, k = [], 0
        for name, shape, params in self._info():
            out.append(range(k, k + len(params)))
            k += len(params)
        return out

    def _layer_weights(self, i):
        w = self._engine.get_weights()
        return [w[k] for k in self._param_slices()[i]]

    def _set_layer_weights(self, i, weights):
        w = self._engine.get_weights()
        sl = self._param_slices()[i]
        if len(weights) != len(sl):
            raise ValueError(f"layer {self._layers[i].name!r} has {len(sl)} weights, got {len(weights)}")
        for k, v in zip(sl, weights):
            w[k] = v
        self._engine.set_weights(w)

    def count_params(self):
        self._require_built()
        return self._engine.n_params

    @property
    def weights(self):
        return self.get_weights()

    def get_weights(self):
        self._require_built()
        return self._engine.get_weights()

    def set_weights(self, weights):
        self._require_built()
        self._engine.set_weights(list(weights))

    # ---- compile ----
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None, weighted_metrics=None,
                **kwargs):
        unknown = set(kwargs) - {"jit_compile", "run_eagerly", "steps_per_execution", "auto_scale_loss"}
        if unknown:
            raise TypeError(f"compile: unknown arguments {sorted(unknown)}")
        if loss is None:
            raise ValueError("compile: loss is required")
        if loss_weights is not None:
            raise ValueError("loss_weights: a Sequential model has one output; leave loss_weights=None")
        opt = optimizers.get(optimizer)
        loss_obj = losses.get(loss)
        given = []
        for arg, weighted in ((metrics, False), (weighted_metrics, True)):
            if arg is None:
                continue
            if isinstance(arg, (str, metrics_mod.Metric)) or callable(arg) and not isinstance(arg, type):
                arg = [arg]
            if not isinstance(arg, (list, tuple)):
                raise ValueError(f"{'weighted_metrics' if weighted else 'metrics'} must be a list, got {arg!r}")
            for m in arg:
                obj, name = metrics_mod.get(m)
                given.append((obj, name, weighted, m if isinstance(m, str) else metrics_mod.serialize(obj)))
        if self._engine is not None:
            self._resolve_metrics([g[:3] for g in given], loss_obj)  # checked before anything changes
        self.optimizer, self.loss = opt, loss_obj
        # as given (names, or serialized objects), for saving
        self._metrics_arg = [c for o, n, w, c in given if not w] or None
        self._weighted_metrics_arg = [c for o, n, w, c in given if w] or None
        self._metric_given = [g[:3] for g in given]
        self.compiled_metrics = [n for o, n, w, c in given]
        opt._model = self
        if self._engine is not None:
            self._compile_engine()

    def _resolve_metrics(self, given, loss):
        """Keras's history names and engine specs of the compiled metrics:
        'accuracy' resolved by the output and target shapes, a repeated
        weighted metric named weighted_<name>. A metric that cannot read the
        loss's targets raises ValueError naming it."""
        out_size = int(np.prod(self._engine.output_shape))
        sparse = loss.kind == losses.SCCE
        objs, names, seen = [], [], set()
        for obj, name, weighted in given:
            if isinstance(obj, metrics_mod._Accuracy):
                obj = metrics_mod.resolve_accuracy(name, out_size, sparse)
            is_sparse = obj.kind in (metrics_mod.SPARSE_CAT_ACC, metrics_mod.SPARSE_TOPK)
            if is_sparse and not sparse and out_size > 1:
                raise ValueError(f"metrics: {name!r} is a sparse metric and needs class-id targets "
                                 f"(loss sparse_categorical_crossentropy); the loss {loss.name!r} takes targets "
                                 f"shaped as the output ({out_size} values per sample)")
            if not is_sparse and sparse:
                raise ValueError(f"metrics: {name!r} needs targets shaped as the output ({out_size} values per "
                                 "sample), the loss sparse_categorical_crossentropy takes class ids; use a sparse_* "
                                 "metric")
            obj.name = name  # Keras renames the object to the name it was given
            if name in seen:
                if weighted:
                    name = f"weighted_{name}"
                k = 1
                base = name
                while name in seen:
                    name = f"{base}_{k}"
                    k += 1
            seen.add(name)
            spec = dict(obj._spec(), weighted=int(weighted))
            objs.append((obj, name, spec))
            names.append(name)
        return objs, names

    def _compile_engine(self):
        self._engine.compile(**self.optimizer._engine_args(), **self.loss._engine_args())
        objs, names = self._resolve_metrics(getattr(self, "_metric_given", []), self.loss)
        try:
            self._engine.set_metrics([spec for _, _, spec in objs])
        except Exception as e:
            raise ValueError(f"metrics: {e}") from None
        self._metric_objs = objs
        self.compiled_metrics = names
        self.metrics_names = ["loss"] + names

    def _require_compiled(self, what):
        if self.optimizer is None or self.loss is None:
            raise RuntimeError(f"You must call compile() before {what}()")

    # ---- training (implemented in training.py) ----
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None, micro_batch=None,
            memory_limit=None, device=None, **kwargs):
        from .training import fit
        return fit(self, x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
                   validation_split=validation_split, validation_data=validation_data, shuffle=shuffle,
                   initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch, micro_batch=micro_batch,
                   memory_limit=memory_limit, device=device, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", steps=None, return_dict=False,
                 memory_limit=None, device=None, **kwargs):
        from .training import evaluate
        return evaluate(self, x, y, batch_size=batch_size, verbose=verbose, steps=steps, return_dict=return_dict,
                        memory_limit=memory_limit, device=device, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, memory_limit=None, device=None, **kwargs):
        from .training import predict
        return predict(self, x, batch_size=batch_size, verbose=verbose, steps=steps, memory_limit=memory_limit,
                       device=device, **kwargs)

    def estimate_memory(self, batch_size=32, optimizer=None, device=None, micro_batch=None, mode="train",
                        memory_limit=None, validation_batch_size=None, shuffle_rows=0):
        """The exact memory plan of a run, without allocating or seeing data
        (shuffle_rows: rows fit will shuffle, for the per-epoch order array)."""
        from .memory import estimate
        return estimate(self, batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch, mode=mode,
                        memory_limit=memory_limit, validation_batch_size=validation_batch_size,
                        shuffle_rows=shuffle_rows)

    # ---- reports ----
    def summary(self, batch_size=None, print_fn=None):
        self._require_built()
        print_fn = print_fn or print
        rows = [("Layer (type)", "Output Shape", "Param #")]
        for layer, (name, shape, params) in zip(self._layers, self._info()):
            n = sum(int(np.prod(s)) for _, s, _ in params)
            rows.append((f"{name} ({type(layer).__name__})", str((None,) + tuple(shape)), f"{n:,}"))
        w = [max(len(r[i]) for r in rows) + 2 for i in range(3)]
        line = "-" * sum(w)
        out = [f'Model: "{self.name}"', line]
        for i, r in enumerate(rows):
            out.append("".join(c.ljust(w[j]) for j, c in enumerate(r)))
            if i == 0:
                out.append("=" * sum(w))
        total, trainable = self._engine.n_params, self._engine.n_trainable
        out += ["=" * sum(w), f"Total params: {total:,} ({total * 4 / 1024:.2f} KB)",
                f"Trainable params: {trainable:,}", f"Non-trainable params: {total - trainable:,}"]
        if self.optimizer is not None:
            bs = batch_size or getattr(self, "_last_batch_size", None) or 32
            out += ["", str(self.estimate_memory(bs))]
        print_fn("\n".join(out))

    def get_config(self):
        """Keras 3's config of this model (keras_config.py): name, layers, ..."""
        from .keras_config import model_config
        return model_config(self)["config"]

    @classmethod
    def from_config(cls, config):
        from .keras_config import sequential_from_config
        return sequential_from_config({"class_name": "Sequential", "config": config})

    def to_json(self, **kwargs):
        import json
        from .keras_config import model_config
        cfg = model_config(self)
        cfg.pop("compile_config", None)
        return json.dumps(cfg, **kwargs)

    # ---- persistence ----
    def save(self, filepath, overwrite=True):
        """Save to a Keras 3 `.keras` file (architecture, weights, compile config, optimizer state), atomically."""
        from .keras_format import save_model
        save_model(self, filepath, overwrite=overwrite)

    def save_weights(self, filepath, overwrite=True):
        """Save weights (and optimizer state) to a Keras 3 `.weights.h5` file, atomically."""
        from .keras_format import save_weights
        save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False):
        """Load a `.weights.h5` (or `.keras`) file written by Keras 3 or boundfit; all or nothing."""
        from .keras_format import load_weights
        load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def __repr__(self):
        return f"<Sequential name={self.name} layers={len(self._layers)}>"


Model = Sequential


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Load a Keras 3 `.keras` file (written by Keras or boundfit)."""
    from .keras_format import load_model as _load
    return _load(filepath, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode)


