"""Cost of boundfit's run-time guards per step (non-finite scan of gradients,
memory watchdog between chunks) on the MLPs of bench_mlp.py: the same fit
timed with the guards on and off, alternating, best of several runs.

    python benchmarks/bench_guard.py
"""

import time

import numpy as np

import boundfit as bf
from boundfit import layers
from boundfit.engine import fit_loop


def timed_fit(sizes, batch, steps, guard, reps):
    bf.utils.set_random_seed(0)
    m = bf.Sequential([layers.Dense(sizes[1], activation="relu", input_shape=(sizes[0],))] +
                      [layers.Dense(s, activation="relu") for s in sizes[2:-1]] + [layers.Dense(sizes[-1])])
    m.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch * steps, sizes[0]), dtype=np.float32)
    y = rng.standard_normal((batch * steps, sizes[-1]), dtype=np.float32)
    fit_loop._GUARD = guard
    best = float("inf")
    try:
        for _ in range(reps):
            t0 = time.perf_counter()
            m.fit(x, y, batch_size=batch, epochs=1, verbose=0)
            best = min(best, time.perf_counter() - t0)
    finally:
        fit_loop._GUARD = True
    return best / steps


def main():
    for name, sizes, batch, steps, reps in [("(a) MLP 100-64-1, batch 32", (100, 64, 1), 32, 4000, 7),
                                            ("(b) MLP 10000-5000-2000-10, batch 256", (10000, 5000, 2000, 10),
                                             256, 4, 3)]:
        on = off = float("inf")
        for _ in range(2):
            off = min(off, timed_fit(sizes, batch, steps, False, reps))
            on = min(on, timed_fit(sizes, batch, steps, True, reps))
        print(f"{name}: {on * 1e6:9.1f} us/step guarded, {off * 1e6:9.1f} us/step unguarded, "
              f"guard cost {(on - off) / off:+.2%} of step time")


if __name__ == "__main__":
    main()
