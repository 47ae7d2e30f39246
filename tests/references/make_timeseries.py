"""Records Keras 3's keras.utils.timeseries_dataset_from_array (its tf.data
path) for tests/test_timeseries_data.py: the batches of each GRID case with
and without targets, the shuffled batches, and keras.io's weather program
under Keras (initial weights, losses, predictions, files written).

Run by hand, with Keras 3 on JAX and TensorFlow installed
(pip install keras "jax[cpu]" tensorflow-cpu), from the repository root:

    PYTHONPATH=python python tests/references/make_timeseries.py

It rewrites tests/references/timeseries.npz."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras_ref  # noqa: E402
import recorded  # noqa: E402
import test_timeseries_data as t  # noqa: E402

keras = keras_ref.load()
ts = keras.utils.timeseries_dataset_from_array
rec = {}
for kw, name in zip(t.GRID, t.GRID_IDS):
    for targets in (t.TARGETS, None):
        recorded.put_batches(rec, f"grid/{name}/{targets is not None}",
                             t._batches(ts(t.DATA, targets, **kw), targets is not None))
recorded.put_batches(rec, "shuffled", t._batches(ts(t.DATA, t.TARGETS, **t.SHUFFLED), True))

with tempfile.TemporaryDirectory() as out:
    scope = {"keras": keras, "np": t.np, "out": out}
    build, train = t.WEATHER.split("w0 = model.get_weights()")
    exec(build, scope)
    recorded.put_batches(rec, "weather/w0", [scope["model"].get_weights()])
    exec(train, scope)
    recorded.put_value(rec, "weather/history_keys", sorted(scope["history"].history))
    rec["weather/loss"] = t.np.array(scope["history"].history["loss"])
    rec["weather/val_loss"] = t.np.array(scope["history"].history["val_loss"])
    rec["weather/preds"] = t.np.array(scope["preds"])
    recorded.put_value(rec, "weather/files", os.listdir(out))
recorded.save("timeseries", rec)
print(f"{len(rec)} arrays -> {os.path.join(recorded.HERE, 'timeseries.npz')}")
