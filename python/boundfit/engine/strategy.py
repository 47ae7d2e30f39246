"""What a run decides by the processes that run it: a Strategy, passed into
fit's loop (engine/fit_loop.py) and into evaluate / predict
(engine/training.py) instead of inline branches. OneProcess is this file's:
every method leaves things as they are. DataParallel (engine/dist_fit.py)
prints from rank 0 only, gives each rank its GPU and its share of the data,
agrees one plan over the ranks, broadcasts rank 0's weights, averages the
moving statistics and sums the logs' totals over the ranks (the gradients
are reduced in the engine by its C counterpart, csrc/core/run_strategy.c), and tells the
other ranks when one fails (guard)."""

import contextlib


class Strategy:
    """The hooks a run calls; the base runs in one process."""

    data_parallel = False   # short plans come back unreserved (all ranks raise together) when True

    def guard(self):
        """Around fit / evaluate / predict: an error on this process is told to the others."""
        return contextlib.nullcontext()

    def verbose(self, v):
        """Whether this process prints progress."""
        return v

    def device(self, device):
        """The device this process runs on, from the one the user named."""
        return device

    # ---- fit ----
    def prepare_fit(self, model, x, validation_data, device):
        """Before the data is adapted: (x, validation_data) as this process reads them."""
        return x, validation_data

    def agree_plan(self, model, plan, replan, auto_batch, train_rows):
        """The plan every process runs (replan(batch) plans this one at another batch size)."""
        return plan

    def shard_fit_data(self, model, train, val, device):
        """After the batch size is known: the weights every process starts from, and its share of the data."""
        return train, val

    def start_run(self, run, device):
        """The training run is open: anything its device copy needs before step one."""

    def end_epoch(self, model):
        """After an epoch's steps, before validation (the moving statistics every process keeps)."""

    def reduce_logs(self, model, parts):
        """The totals and metric sums of [(totals, run, sharded)] as one process over all the rows has them."""

    def is_sharded(self, src):
        """Whether this process reads only its share of src's rows."""
        return False

    # ---- evaluate / predict ----
    def shard_eval(self, model, src):
        return src

    def shard_predict(self, model, src):
        """(src as this process predicts it, gather): gather is None, or (rows, rows per process)."""
        return src, None

    def predict_rows(self, src, gather):
        """predict's rows for the plan (None for a Sequence)."""
        return src.num_rows

    def gather_predictions(self, preds, gather):
        return preds


class OneProcess(Strategy):
    """A run in this process alone."""


ONE_PROCESS = OneProcess()
