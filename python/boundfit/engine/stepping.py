"""How fit, evaluate and predict step through a data source's batches: the
engine runs chunks of steps of about _CHUNK_SECONDS with the GIL released,
returning to Python between chunks (progress, callbacks, Ctrl-C, the memory
watchdog); a run steps one at a time when a callback overrides a batch hook
or the learning rate is a schedule the engine has no closed form for."""

import time

_CHUNK_SECONDS = 0.1


def verbose_level(v):
    return 1 if v == "auto" else int(v)


def chunks(run_fn, total_steps, on_chunk, stop=None):
    """Call run_fn(first, n) over [0, total_steps) in chunks of about _CHUNK_SECONDS
    (until stop() is true, checked after each chunk)."""
    step, chunk = 0, 1
    while step < total_steps and not (stop is not None and stop()):
        n = min(chunk, total_steps - step)
        t0 = time.perf_counter()
        out = run_fn(step, n)
        dt = time.perf_counter() - t0
        step += n
        on_chunk(step, out)
        per = dt / n if n else dt
        chunk = max(1, min(4 * chunk, int(_CHUNK_SECONDS / per) if per > 0 else 4 * chunk))


class Stepper:
    """The `chunks` a data source runs an epoch with: chunks() when no batch hook
    needs each step, else one step at a time with before_step(step) first.
    Either way it stops after the step where model.stop_training became true."""

    def __init__(self, model, per_step, before_step=None):
        self.model, self.per_step, self._before = model, per_step, before_step

    def stopped(self):
        return bool(self.model.stop_training)

    def before_step(self, step):
        if self.per_step and self._before is not None:
            self._before(step)

    def __call__(self, run_fn, total_steps, on_chunk):
        if not self.per_step:
            return chunks(run_fn, total_steps, on_chunk, stop=self.stopped)
        for step in range(total_steps):
            if self.stopped():
                break
            self.before_step(step)
            on_chunk(step + 1, run_fn(step, 1))
