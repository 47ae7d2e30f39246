"""compile(): the optimizer, the loss of each output, the metrics resolved
by their outputs' shapes into Keras's history names and the engine's specs."""

import inspect

from .. import graph, losses, metrics as metrics_mod, optimizers
from ..engine import logs


class Compiling:
    """Model.compile and what it sets in the engine."""

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None, weighted_metrics=None,
                **kwargs):
        """Keras's `compile`: optimizer (name or object), loss (name, `Loss`, function, or one per output; None:
        the losses the model adds train it, or its overridden compute_loss()), metrics, loss_weights,
        weighted_metrics."""
        unknown = set(kwargs) - {"jit_compile", "run_eagerly", "steps_per_execution", "auto_scale_loss"}
        if unknown:
            raise TypeError(f"compile: unknown arguments {sorted(unknown)}")
        opt = self._given_optimizer = optimizers.get(optimizer)
        if kwargs.get("auto_scale_loss", True) and getattr(self, "_dtype_policy", None) is not None and \
                self._dtype_policy.name == "mixed_float16" and not isinstance(opt, optimizers.LossScaleOptimizer):
            opt = optimizers.LossScaleOptimizer(opt, name="loss_scale_optimizer")   # as Keras's compile
        names = self._output_names or ["output"]
        n_out = len(names)
        if self._computes_loss():   # compute_loss() overridden: it is the loss (traced, loss_graph.py)
            if loss is not None:
                raise ValueError(f"compile: {type(self).__name__} overrides compute_loss(), which boundfit traces "
                                 "as the whole loss (it cannot call the compiled loss, Model.compute_loss); "
                                 "compile without loss=, or drop the override")
            out_losses = [losses.CustomLoss(self._traced_compute_loss, "compute_loss")] * n_out
        else:   # None: no loss for that output (the losses the model adds train it)
            out_losses = graph.per_output(loss, names, "loss",
                                          lambda l: losses._NoLoss() if l is None else losses.get(l))
        weights = graph.per_output(1.0 if loss_weights is None else loss_weights, names, "loss_weights", float)
        given, raw = [], []   # (output, metric object, name, weighted, as given); (output, as given, weighted)
        for arg, weighted in ((metrics, False), (weighted_metrics, True)):
            what = "weighted_metrics" if weighted else "metrics"
            for k, ms in enumerate(graph.per_output_metrics(arg, names, what)):
                for m in ms:
                    obj, name = metrics_mod.get(m)
                    given.append((k, obj, name, weighted, m if isinstance(m, str) else metrics_mod.serialize(obj)))
                    raw.append((k, m, weighted))
        if self._engine is not None:
            self._resolve_metrics([g[:4] for g in given], out_losses)  # checked before anything changes
        self.optimizer, self.loss = opt, out_losses[0]
        self._out_losses, self._loss_weights = out_losses, weights
        self._multi_loss = n_out > 1 or loss_weights is not None
        self._compile_given = (loss, loss_weights)   # as given, for Keras's compile_config
        # as given (names, or serialized objects), for saving
        self._metrics_arg = metrics if n_out > 1 else [c for _, o, n, w, c in given if not w] or None
        self._weighted_metrics_arg = weighted_metrics if n_out > 1 else [c for _, o, n, w, c in given if w] or None
        self._metric_given = [g[:4] for g in given]
        self._metric_raw, self._loss_trainer = raw, None
        self._metric_cfgs = [(k, w, c) for k, o, n, w, c in given]
        self.compiled_metrics = [self._metric_log_name(k, n) for k, o, n, w, c in given]
        opt._model = self
        if self._engine is not None:
            if self._built_sig is not None and self._built_sig != self._trainable_sig():
                self._build_engine()  # trainable changed: the plan and parameter layout change with it
            else:
                self._compile_engine()
            self._drop_cached_engines()   # the others were compiled for the optimizer and loss before
            if self._functional and not self._dynamic and not self._is_training_graph:
                try:   # the training graph's engine now, not inside the first fit (whose plan it is)
                    self._trainer_for()
                except Exception:   # noqa: BLE001 - raised again, as Keras raises it, by fit / evaluate
                    self._loss_trainer = None

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras's hook for a subclass: override it to return the loss from x, y and y_pred, written in keras.ops
        as a mean over the batch (`ops.mean`, at most times numbers); boundfit traces it into the training graph
        (then compile() takes no loss=). This base one (the compiled loss plus the added losses) is computed
        by the engine and cannot be called."""
        raise NotImplementedError(
            f"{type(self).__name__}.compute_loss: boundfit computes the compiled loss and the added losses in the "
            "engine, so Model.compute_loss cannot be called (nor super().compute_loss() from an override); write "
            "the whole loss in the override with keras.ops")

    def _computes_loss(self):
        """Whether the class overrides compute_loss()."""
        return type(self).compute_loss is not Compiling.compute_loss

    def _traced_compute_loss(self, y_true, y_pred):
        """The overridden compute_loss() on the model's symbolic inputs, targets and output (one output), as a
        loss function of (y_true, y_pred) for loss_trace; sample weights are not passed (refused at fit)."""
        if self._n_outputs > 1:
            raise ValueError(f"{type(self).__name__}.compute_loss: boundfit traces an overridden compute_loss for "
                             f"a model of one output; this one has {self._n_outputs}: compile(loss=...) per output")
        if "training" in inspect.signature(self.compute_loss).parameters:   # (as Keras: an override may not take it)
            return self.compute_loss(x=self.input, y=y_true, y_pred=y_pred, sample_weight=None, training=True)
        return self.compute_loss(x=self.input, y=y_true, y_pred=y_pred, sample_weight=None)

    def _metric_log_name(self, k, name):
        """Keras's history name of a metric of output k: `<output>_<name>` when the model has several outputs."""
        return f"{self._output_names[k]}_{name}" if self._n_outputs > 1 else name

    def _resolve_metrics(self, given, out_losses):
        """Keras's history names and engine specs of the compiled metrics, each
        on its output: 'accuracy' resolved by that output's and its targets'
        shapes, a repeated weighted metric named weighted_<name>, and with
        several outputs `<output>_<name>`. A metric that cannot read its
        output's targets raises ValueError naming it."""
        shapes = self._engine.output_shapes
        objs, names, seen = [], [], set()
        for k, obj, name, weighted in given:
            loss = out_losses[k]
            out_size = int(shapes[k][-1]) if len(shapes[k]) else 1  # Keras decides on the last axis
            sparse = loss.kind == losses.SCCE
            where = f" (output {self._output_names[k]!r})" if len(shapes) > 1 else ""
            if isinstance(obj, metrics_mod._Accuracy) and not len(shapes[k]):
                raise ValueError(f"metrics: {name!r}{where} on an output of one number per sample (shape (None,)): "
                                 "Keras 3 reads the batch axis as its last axis and computes categorical accuracy "
                                 "over the batch (one 0 / 1 per batch), mixing the samples; name 'binary_accuracy' "
                                 "(or give the output shape (None, 1))")
            if isinstance(obj, metrics_mod.Mean):   # (and Sum): a metric of values, not of (y_true, y_pred)
                raise ValueError(f"metrics: {name!r}{where} is a {type(obj).__name__}, which takes values "
                                 "(update_state(values, sample_weight)), not (y_true, y_pred): Keras's compile() "
                                 "cannot call it either; pass MeanMetricWrapper(fn) or the function fn")
            if isinstance(obj, metrics_mod.TracedMetric):   # traced into the training graph (loss_graph.py)
                if not len(shapes[k]):
                    raise ValueError(f"metrics: {name!r}{where} on an output of one number per sample (shape "
                                     "(None,)): Keras 3 computes it over the batch axis, mixing the samples; give "
                                     "the output shape (None, 1)")
            traced = isinstance(obj, metrics_mod.TracedMetric)
            if isinstance(obj, metrics_mod._Accuracy):
                obj = metrics_mod.resolve_accuracy(name, out_size, sparse)
            is_sparse = obj.kind in (metrics_mod.SPARSE_CAT_ACC, metrics_mod.SPARSE_TOPK)
            custom = loss.kind == losses.MEAN   # a traced loss takes the targets as given: class ids, where they are
            if is_sparse and not sparse and out_size > 1 and not traced and not custom:
                raise ValueError(f"metrics: {name!r}{where} is a sparse metric and needs class-id targets "
                                 f"(loss sparse_categorical_crossentropy); the loss {loss.name!r} takes targets "
                                 f"shaped as the output ({out_size} values per sample)")
            if not is_sparse and sparse and not traced:
                raise ValueError(f"metrics: {name!r}{where} needs targets shaped as the output ({out_size} values per "
                                 "sample), the loss sparse_categorical_crossentropy takes class ids; use a sparse_* "
                                 "metric")
            obj.name = name  # Keras renames the object to the name it was given
            if len(shapes) > 1:
                name = f"{self._output_names[k]}_{name}"
            if name in seen:
                if weighted:
                    name = f"weighted_{name}"
                j = 1
                base = name
                while name in seen:
                    name = f"{base}_{j}"
                    j += 1
            seen.add(name)
            spec = None if traced else dict(obj._spec(), weighted=int(weighted), output=k)
            if not len(shapes[k]) and not traced:
                spec.update(_scalar_output_metric(obj, name, where, weighted))
            objs.append((obj, name, spec))
            names.append(name)
        return objs, names

    def _compile_engine(self):
        kw = {}
        if getattr(self, "_multi_loss", False):
            kw["outputs"] = [(l.kind, l.from_logits, w, l.label_smoothing, l.delta)
                             for l, w in zip(self._out_losses, self._loss_weights)]
        self._engine.compile(**self.optimizer._engine_args(self), **self.loss._engine_args(), **kw)
        objs, names = self._resolve_metrics(getattr(self, "_metric_given", []), self._out_losses)
        traced = set() if self._is_training_graph else \
            {k for k, l in enumerate(self._out_losses) if l.kind == losses.MEAN}   # a custom loss: its training
        try:                                  # graph computes the output's metrics (on targets as given: class ids)
            self._engine.set_metrics([spec for _, _, spec in objs if spec is not None and spec["output"] not in traced])
        except Exception as e:
            raise ValueError(f"metrics: {e}") from None
        self._metric_objs = objs
        self.compiled_metrics = names

    def _require_compiled(self, what):
        if self.optimizer is None or self.loss is None:
            raise RuntimeError(f"You must call compile() before {what}()")

    @property
    def _n_outputs(self):
        return len(self._outputs) if self._outputs else 1

    @property
    def metrics_names(self):
        """The keys the model logs (`loss`, then the metrics, per output where there are several)."""
        return logs.log_keys(self)


def _scalar_output_metric(obj, name, where, weighted):
    """A metric of an output of one number per sample (Keras (B,)): Keras's MAE and MSE reduce over its last
    axis, the batch axis, so their result is the mean of each batch's mean (the engine's batch_mean); the
    accuracies by argmax would compare samples with one another, and weights would weigh each batch's mean by
    the batch's summed weights: both raise naming the metric."""
    k = obj.kind
    if k in (metrics_mod.CAT_ACC, metrics_mod.SPARSE_CAT_ACC, metrics_mod.TOPK, metrics_mod.SPARSE_TOPK):
        raise ValueError(f"metrics: {name!r}{where} on an output of one number per sample (shape (None,)): Keras 3 "
                         "takes the batch axis as the classes, mixing the samples; give the output shape (None, C)")
    if k not in (metrics_mod.MAE, metrics_mod.MSE):   # (binary accuracy, RMSE, the counts: per element)
        return {}
    if weighted:
        raise ValueError(f"metrics: the weighted metric {name!r}{where} on an output of one number per sample "
                         "(shape (None,)): Keras 3 averages it over the batch axis before weighing it, mixing the "
                         "samples; give the output shape (None, 1) (keras.ops.expand_dims(x, -1))")
    return {"batch_mean": 1}
