"""fit(validation_data=...) with batches of several lengths (a Sequence /
PyDataset of buckets, as keras.io's text pipelines batch them) for a
variable-length model: each validation batch runs on its length's engine
while the training run is closed, each length's validation run is planned
once, exactly, and checked against the budget before its first batch; the
logs equal Keras 3 evaluating the same batches (JAX backend)."""

import inspect

import numpy as np
import pytest

import boundfit as bf
from boundfit.errors import DataError

from helpers.keras_recorded import case
from keras_ref import load
from test_variable_length import bucket_batches, bucket_model, bucket_source

KEYS = ("loss", "accuracy", "val_loss", "val_accuracy")


def keras_fits(tmp_path, fit, evaluate=None):
    """Keras's side, recorded: bucket_model's initial weights (w), fit(keras, km)'s history, the weights after
    (w1) and evaluate(keras, km)'s result; keyed by the source of test_variable_length's helpers too"""
    def compute():
        keras = load()
        km = bucket_model(keras)
        w = km.get_weights()   # before any data: the weights do not depend on the length
        km.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
        h = fit(keras, km).history
        return dict(w=w, history={k: h[k] for k in KEYS}, w1=km.get_weights(),
                    evaluate=evaluate(keras, km) if evaluate is not None else None)
    helpers = tmp_path / "helpers.py"
    helpers.write_text("".join(inspect.getsource(f) for f in (bucket_model, bucket_batches, bucket_source)))
    k = case(compute, files=[helpers])
    bm = bucket_model(bf)
    bm.set_weights(k["w"])
    bm.compile(bf.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    return k, bm


def test_validation_batches_of_several_lengths_match_keras(tmp_path):
    train, val = bucket_batches([5, 7, 5, 9]), bucket_batches([4, 6, 4, 8], seed=3)

    def fit(M, m):
        return m.fit(bucket_source(M, train), validation_data=bucket_source(M, val), shuffle=False, verbose=0,
                     epochs=2)
    k, bm = keras_fits(tmp_path, fit, lambda keras, km: km.evaluate(bucket_source(keras, val), verbose=0))
    hk, hb = k["history"], fit(bf, bm).history
    for key in ("loss", "val_loss", "val_accuracy", "accuracy"):
        np.testing.assert_allclose(hb[key], hk[key], rtol=1e-4, err_msg=key)
    for a, b in zip(k["w1"], bm.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=2e-5)
    # the same numbers as evaluate over the same batches after fit (Keras's and boundfit's)
    np.testing.assert_allclose(bm.evaluate(bucket_source(bf, val), verbose=0), hb["val_loss"][-1:] +
                               hb["val_accuracy"][-1:], rtol=1e-6)
    np.testing.assert_allclose(k["evaluate"], hb["val_loss"][-1:] + hb["val_accuracy"][-1:], rtol=1e-4)
    # every validation run's arena high-water is its length's plan; each length planned once
    runs = bm._validation_runs
    assert [r[0] for r in runs] == [[(4,)], [(6,)], [(4,)], [(8,)]] * 2
    assert sorted(bm._validation_plans) == [((4,),), ((6,),), ((8,),)]
    for shapes, plan, stats, engine_bytes in runs:   # (an evaluate plan holds the parameters, no optimizer state)
        assert plan is bm._validation_plans[((shapes[0][0],),)]
        run = sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured", "cached", "parameters"))
        assert run == stats["run_high_water"] > 0, shapes
    assert all(p.mode == "evaluate" for p in bm._validation_plans.values())


def test_arrays_of_one_length_validated_on_batches_of_others(tmp_path):
    """training on arrays of one length, validation from a Sequence of other lengths (validation_freq=2)"""
    rng = np.random.default_rng(8)
    x, y = rng.integers(0, 30, (12, 5)).astype(np.int32), rng.integers(0, 2, (12, 1)).astype(np.float32)
    val = bucket_batches([3, 8], seed=4)

    def fit(M, m):
        return m.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0, validation_data=bucket_source(M, val),
                     validation_freq=2)
    k, bm = keras_fits(tmp_path, fit)
    hk, hb = k["history"], fit(bf, bm).history
    for key in KEYS:
        np.testing.assert_allclose(hb[key], hk[key], rtol=1e-4, err_msg=key)
    assert len(hb["val_loss"]) == 1
    # the training run was closed for validation (after epoch 2) and reopened on its plan: exact each time
    assert [r[0] for r in bm._bucket_runs] == [[(5,)], [(5,)]]
    for shapes, plan, stats, engine_bytes in bm._bucket_runs:
        planned = sum(e.bytes for e in plan.breakdown if e.category not in ("runtime", "measured", "cached"))
        assert planned == engine_bytes + stats["run_high_water"]


def test_validation_arrays_of_another_length_than_training_match_keras(tmp_path):
    """keras.io pads each split to its own length: training at 6 steps, validation arrays at 4"""
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 30, (8, 6)).astype(np.int32), rng.integers(0, 2, (8, 1)).astype(np.float32)
    xv, yv = rng.integers(0, 30, (5, 4)).astype(np.int32), rng.integers(0, 2, (5, 1)).astype(np.float32)

    def fit(M, m):
        return m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, validation_data=(xv, yv))
    k, bm = keras_fits(tmp_path, fit)
    hk, hb = k["history"], fit(bf, bm).history
    for key in KEYS:
        np.testing.assert_allclose(hb[key], hk[key], rtol=1e-4, err_msg=key)
    assert [r[0] for r in bm._validation_runs] == [[(4,)], [(4,)]]


def test_a_validation_length_that_does_not_fit_stops_before_its_first_batch():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy")
    est = m.estimate_memory(batch_size=6, lengths=[5, 4000]).plans_by_length
    limit = (est[5].host_bytes - est[5].held_bytes + est[4000].host_bytes - est[4000].held_bytes) // 2
    batches = bucket_batches([5, 5])
    with pytest.raises(bf.MemoryBudgetError, match=r"validation batch 1: input shape \(None, 4000\)") as err:
        m.fit(bucket_source(bf, batches), validation_data=bucket_source(bf, bucket_batches([5, 4000], seed=2)),
              epochs=1, shuffle=False, verbose=0, memory_limit=limit)
    assert err.value.needed_bytes > err.value.available_bytes
    assert int(m.optimizer.iterations) == 2   # the epoch's two steps were taken, validation stopped there
    with pytest.raises(bf.MemoryBudgetError, match=r"validation batch 0: input shape \(None, 4000\)"):
        m.fit(bucket_source(bf, batches), validation_data=bucket_source(bf, bucket_batches([4000], seed=2)),
              epochs=1, shuffle=False, verbose=0, memory_limit=limit)


def test_bad_validation_batches_are_named():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy")
    train = bucket_source(bf, bucket_batches([5]))
    bad = bucket_batches([4, 6], seed=1)
    bad[1] = (bad[1][0], bad[1][1][:, :0])             # y of another shape in the second batch
    with pytest.raises(DataError, match="validation batch 1: y"):
        m.fit(train, validation_data=bucket_source(bf, bad), verbose=0)
    first = [(np.zeros((6, 4, 2), np.int32), np.zeros((6, 1), np.float32))]   # rank 3 ids: named before step one
    with pytest.raises(ValueError, match=r"input 0 must have shape \(None, None\)"):
        m.fit(train, validation_data=bucket_source(bf, first), verbose=0)
    assert int(m.optimizer.iterations) == 1


def test_declared_lengths_plan_validation_too_and_refuse_others():
    m = bucket_model(bf)
    m.compile("adam", "binary_crossentropy")
    train = bucket_source(bf, bucket_batches([5, 9]))
    m.fit(train, lengths=[4, 5, 9], validation_data=bucket_source(bf, bucket_batches([9, 4], seed=2)), verbose=0)
    assert sorted(m._validation_plans) == [((4,),), ((5,),), ((9,),)]   # every declared length, before step one
    assert [r[0] for r in m._validation_runs] == [[(9,)], [(4,)]]
    with pytest.raises(DataError, match=r"validation batch 1: input shape \(None, 7\) is not one of the lengths"):
        m.fit(train, lengths=[4, 5, 9], validation_data=bucket_source(bf, bucket_batches([4, 7], seed=2)), verbose=0)
    with pytest.raises(DataError, match=r"validation batch 0: input shape \(None, 7\) is not one of the lengths"):
        m.fit(train, lengths=[5, 9], validation_data=bucket_source(bf, bucket_batches([7], seed=2)), verbose=0)
    # validation batches of 600 rows at a declared length: its plan refuses before step one
    train_need = m.estimate_memory(batch_size=6, lengths=[5, 9])
    val_need = m.estimate_memory(batch_size=600, mode="evaluate", lengths=[9])
    limit = (train_need.host_bytes - train_need.held_bytes + val_need.host_bytes - val_need.held_bytes) // 2
    assert train_need.host_bytes - train_need.held_bytes < limit < val_need.host_bytes - val_need.held_bytes
    n = int(m.optimizer.iterations)
    big = [(np.zeros((600, 9), np.int32), np.zeros((600, 1), np.float32))]
    with pytest.raises(bf.MemoryBudgetError, match=r"validation: input shape \(None, 9\)"):
        m.fit(train, lengths=[9, 5], validation_data=bucket_source(bf, big), verbose=0, memory_limit=limit)
    assert int(m.optimizer.iterations) == n   # refused before step one
