"""fit / evaluate / predict / estimate_memory of a model: the training
graph runs them for a custom loss or losses layers add (models/loss_graph.py),
else the engine's loops (engine/training.py) under the Strategy of the
processes running them (engine/strategy.py, engine/dist_fit.py)."""

import itertools

from .. import config, graph
from ..engine import buckets, data as data_mod, dist_fit, memory, training
from . import loss_graph, temporal_weights


class Fitting:
    """Model's runs: fit, evaluate, predict, and the memory plan of one."""

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, initial_epoch=0, steps_per_epoch=None, micro_batch=None,
            memory_limit=None, device=None, **kwargs):
        """Keras's `fit`, planned first: the run's memory plan is checked against the budget before step one
        (MemoryBudgetError if it does not fit).

        Beyond Keras's arguments: `micro_batch` (None, an int or "auto"), `batch_size="auto"`, `memory_limit`
        (bytes or "512MiB"), `device` ("cpu", "cuda", "cuda:N", "emu"), `memory_wait` (seconds to wait for other
        runs' memory). Returns a `History`."""
        self._refuse_step_overrides()
        epochs, steps_per_epoch = config.capped_epochs(epochs), config.capped_steps(steps_per_epoch)
        x = self._built_on(x)
        trainer = self._trainer_for(y, x, temporal_weights.of_data(self, x, kwargs))
        if trainer is not None:   # a custom loss or losses added by layers: the training graph fits
            x, y, kwargs, validation_data = trainer._data(x, y, kwargs, validation_data)
            self._trainer_running = True   # callbacks read this model's weights: from the graph, fresh
            try:
                self.history = trainer.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                                           callbacks=callbacks, validation_split=validation_split,
                                           validation_data=validation_data, shuffle=shuffle,
                                           initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch,
                                           micro_batch=micro_batch, memory_limit=memory_limit, device=device,
                                           **kwargs)
            finally:
                self._trainer_running, self._trainer_dirty = False, True
                self._after_trainer(trainer)
            self._last_plan, self._last_batch_size = trainer._last_plan, trainer._last_batch_size
            return self.history
        strategy = dist_fit.strategy()
        with strategy.guard():   # a rank's error reaches the others at once
            return training.fit(self, strategy, x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                                callbacks=callbacks, validation_split=validation_split,
                                validation_data=validation_data, shuffle=shuffle, initial_epoch=initial_epoch,
                                steps_per_epoch=steps_per_epoch, micro_batch=micro_batch, memory_limit=memory_limit,
                                device=device, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", steps=None, return_dict=False,
                 memory_limit=None, device=None, **kwargs):
        """Keras's `evaluate`: the loss and metrics over (x, y), planned and checked against the budget first;
        `return_dict=True` gives a dict."""
        self._refuse_step_overrides()
        steps = config.capped_steps(steps)
        x = self._built_on(x)
        trainer = self._trainer_for(y, x, temporal_weights.of_data(self, x, kwargs))
        if trainer is not None:   # a custom loss or losses added by layers: the training graph evaluates
            x, y, kwargs, _ = trainer._data(x, y, kwargs, None)
            return trainer.evaluate(x, y, batch_size=batch_size, verbose=verbose, steps=steps,
                                    return_dict=return_dict, memory_limit=memory_limit, device=device, **kwargs)
        strategy = dist_fit.strategy()
        with strategy.guard():
            return training.evaluate(self, strategy, x, y, batch_size=batch_size, verbose=verbose, steps=steps,
                                     return_dict=return_dict, memory_limit=memory_limit, device=device, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, memory_limit=None, device=None, **kwargs):
        """Keras's `predict`: the outputs for x as NumPy arrays; the returned array is in the run's plan."""
        steps = config.capped_steps(steps)
        strategy = dist_fit.strategy()
        with strategy.guard():
            return training.predict(self, strategy, x, batch_size=batch_size, verbose=verbose, steps=steps,
                                    memory_limit=memory_limit, device=device, **kwargs)

    def estimate_memory(self, batch_size=32, optimizer=None, device=None, micro_batch=None, mode="train",
                        memory_limit=None, validation_batch_size=None, shuffle_rows=0, sample_weight=False,
                        lengths=None):
        """The exact memory plan of a run, without seeing data (shuffle_rows:
        rows fit will shuffle, for the per-epoch order array; sample_weight:
        whether the run gets sample or class weights, whose per-batch slots it
        then holds). A variable-length model is planned at `lengths` (a list:
        the plan of the length that needs most, each length's plan in
        `.plans_by_length`; its engines are built and kept for the fit), or
        else at the length it last ran (8 before any data)."""
        weighted = memory.Weighted(train=bool(sample_weight), evaluate=bool(sample_weight) and mode == "evaluate")
        trainer = self._trainer_for() if mode != "predict" else None
        if trainer is not None:   # fit / evaluate run the training graph: its plan
            return trainer.estimate_memory(batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch,
                                           mode=mode, memory_limit=memory_limit,
                                           validation_batch_size=validation_batch_size, shuffle_rows=shuffle_rows,
                                           sample_weight=sample_weight, lengths=lengths)
        if lengths is not None:
            plans = {}
            for n, shapes in zip(lengths, buckets.declared_shapes(self, lengths)):
                self._bind_to(shapes)
                plans[int(n)] = memory.estimate(
                    self, batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch, mode=mode,
                    memory_limit=memory_limit, validation_batch_size=validation_batch_size,
                    shuffle_rows=shuffle_rows, weighted=weighted)
            def own(p):   # less the other lengths' cached engines, which are held whichever runs
                return p.host_bytes + p.device_bytes - sum(e.bytes for e in p.breakdown if e.category == "cached")
            worst = max(plans, key=lambda n: own(plans[n]))
            plan = plans[worst]
            plan.plans_by_length, plan.length = plans, worst
            return plan
        return memory.estimate(self, batch_size, optimizer=optimizer, device=device, micro_batch=micro_batch, mode=mode,
                               memory_limit=memory_limit, validation_batch_size=validation_batch_size,
                               shuffle_rows=shuffle_rows, weighted=weighted)

    def _refuse_step_overrides(self):
        """A subclass's train_step / test_step (Python run each step) is not called: refused, with what to use."""
        for name in ("train_step", "test_step"):
            if callable(getattr(type(self), name, None)):
                raise NotImplementedError(
                    f"{type(self).__name__}.{name}: boundfit runs fit / evaluate's steps in its engine, planned "
                    "before step one, and never calls Python per step; put the loss in the model instead: "
                    "self.add_loss(...) in call() (keras.io's VAE: the KL term), compute_loss() overridden, or "
                    "compile(loss=fn)")

    def _built_on(self, x):
        """A subclassed model not traced yet is traced on x's shapes first (the
        first batch of a Sequence or generator; a generator's first batch is put
        back in front), so that its losses are known. Returns x."""
        if self._functional or x is None or self.optimizer is None:
            return x
        if not data_mod._is_sequence(x):
            self._require_built(x)
            return x
        if hasattr(x, "__getitem__") and hasattr(x, "__len__"):
            first = x[0] if len(x) else None
        else:
            it = iter(x)
            first = next(it, None)
            x = itertools.chain([] if first is None else [first], it)
        if isinstance(first, (tuple, list)) and first and not isinstance(first[0], dict):   # a dict: the data
            self._require_built(first[0])                                         # pipeline names the batch
        return x

    def _trainer_for(self, y=None, x=None, temporal=None):
        """The training graph fit / evaluate run when the loss is a custom
        function or layers add losses (built once per compile and shape of
        the targets y a custom loss takes as given), else None. x: the data
        (a variable-length model's graph is first traced at its length);
        temporal: the per-sample shape of sample weights (batch, T), which
        the training graph takes (models/temporal_weights.py)."""
        if self.optimizer is None or self._out_losses is None or self._is_training_graph or \
                not self._functional:
            return None
        if not loss_graph.needed(self, self._out_losses) and temporal is None:
            return None
        self._require_built()
        out_losses = self._out_losses if temporal is None else temporal_weights.traced_losses(self, self._out_losses)
        if self._dynamic:   # one training graph traced per length (models/loss_lengths.py)
            return self._length_trainer(x, y, out_losses, temporal is not None)
        y_shapes = loss_graph.target_shapes(self, out_losses, y)
        sig = (self._trainable_sig(), id(self._engine), y_shapes, temporal)   # (the graph holds the engine whose
        if self._loss_trainer is None or self._loss_trainer[0] != sig:                       # weights it takes)
            lg = loss_graph.LossGraph(self, out_losses, self._loss_weights, self._metric_raw, y_shapes,
                                      temporal=temporal is not None)
            self._loss_trainer = (sig, self._training_graph(lg))
        return self._loss_trainer[1]

    def _length_trainer(self, x=None, y=None, out_losses=None, temporal=False):
        """A variable-length model's training graph: kept while the trainable flags stay, on the weights of the
        engine it was built on (made current again first: the weights carried into it from the current one);
        made at the length of the data x (its first batch), or the length bound."""
        have = self._loss_trainer
        if have is not None and have[0] == (self._trainable_sig(), "lengths", temporal):
            t = have[1]
            if not self._trainer_running and self._engine is not t._base:
                self._bind_to(list(t._base_shapes))
            if self._engine is t._base:
                return t
        out_losses = self._out_losses if out_losses is None else out_losses
        if data_mod._is_sequence(x):   # its first batch, where it can be read again (a generator's cannot)
            first = x[0] if hasattr(x, "__getitem__") and hasattr(x, "__len__") and len(x) else None
            x, y = (first[0], first[1]) if isinstance(first, (tuple, list)) and len(first) in (2, 3) else (None, None)
        if x is not None:
            self._bind_shapes(x)
        with graph.at_shapes(self, self._bound):
            ys = loss_graph.target_shapes(self, out_losses, y)
        lg = loss_graph.LossGraph(self, out_losses, self._loss_weights, self._metric_raw, ys, at=self._bound,
                                  temporal=temporal)
        t = self._training_graph(lg)
        t._base_shapes = list(self._bound)
        self._loss_trainer = ((self._trainable_sig(), "lengths", temporal), t)
        return t

    def _after_trainer(self, trainer):
        """After a run of a variable-length model's training graph: the engine it trained current again (a
        callback's predict at another length may have switched it; that engine's weights are older)."""
        if self._dynamic and trainer._rec is not None and self._engine is not trainer._base:
            self._return_to(trainer._base)
