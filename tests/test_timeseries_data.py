"""keras.utils.timeseries_dataset_from_array against Keras 3's own (its
tf.data path, recorded in tests/references/timeseries.npz by
make_timeseries.py): the same windows and targets batch for batch, the same
set of windows when shuffled, windows gathered from a memmap per batch,
errors naming the argument, and keras.io's weather forecasting program (an
LSTM on sampled windows) run unchanged, training as it trained under Keras."""

import os

import numpy as np
import pytest

import boundfit as bf
import recorded

DATA = np.arange(100 * 3, dtype=np.float32).reshape(100, 3)
TARGETS = np.arange(100, dtype=np.float32) * 10

GRID = [dict(sequence_length=5), dict(sequence_length=4, sequence_stride=3, sampling_rate=2, batch_size=7),
        dict(sequence_length=3, start_index=10, end_index=60, batch_size=8),
        dict(sequence_length=6, sampling_rate=3, batch_size=None)]
GRID_IDS = ["default", "stride-rate-batch", "start-end", "unbatched"]
SHUFFLED = dict(sequence_length=4, sampling_rate=2, batch_size=16, shuffle=True, seed=3)


def _batches(ds, with_targets):
    return [tuple(np.asarray(a) for a in (b if with_targets else (b,))) for b in ds]


@pytest.mark.parametrize("kw", GRID, ids=GRID_IDS)
@pytest.mark.parametrize("targets", [TARGETS, None], ids=["targets", "no-targets"])
def test_windows_and_targets_equal_keras_batch_for_batch(kw, targets):
    want = recorded.batches(recorded.load("timeseries"), f"grid/{GRID_IDS[GRID.index(kw)]}/{targets is not None}")
    ds = bf.utils.timeseries_dataset_from_array(DATA, targets, **kw)
    got = _batches(ds, targets is not None)
    assert len(ds) == len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


def test_shuffled_windows_are_keras_windows_in_a_seeded_order():
    kw = SHUFFLED
    flat = lambda bs: sorted(tuple(w.ravel()) + (float(y),) for x, ys in bs for w, y in zip(x, ys))
    want = recorded.batches(recorded.load("timeseries"), "shuffled")
    got = _batches(bf.preprocessing.timeseries_dataset_from_array(DATA, TARGETS, **kw), True)
    assert flat(got) == flat(want)
    again = _batches(bf.utils.timeseries_dataset_from_array(DATA, TARGETS, **kw), True)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(got, again))   # the seed fixes the order
    first = got[0][0][:, 0, 0] / 3   # the start rows of batch 0: shuffled, not in order
    assert list(first) != sorted(first)


def test_a_memmap_stays_on_disk_and_fit_reads_its_windows(tmp_path):
    path = tmp_path / "series.npy"
    np.save(path, DATA)
    mm = np.load(path, mmap_mode="r")
    ds = bf.utils.timeseries_dataset_from_array(mm, TARGETS, sequence_length=5, batch_size=16)
    assert isinstance(ds.data, np.memmap)
    x, y = ds[1]
    np.testing.assert_array_equal(x, np.stack([DATA[i:i + 5] for i in range(16, 32)]))
    np.testing.assert_array_equal(y, TARGETS[16:32])
    m = bf.Sequential([bf.layers.Input((5, 3)), bf.layers.LSTM(4), bf.layers.Dense(1)])
    m.compile(optimizer="adam", loss="mse")
    h = m.fit(ds, epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])
    assert len(ds.take(2)) == 2 and len(ds.take(99)) == len(ds)


def test_bad_arguments_raise_naming_them():
    ts = bf.utils.timeseries_dataset_from_array
    with pytest.raises(ValueError, match="sequence_length must be an integer >= 1"):
        ts(DATA, None, sequence_length=0)
    with pytest.raises(ValueError, match="sampling_rate must be an integer"):
        ts(DATA, None, sequence_length=3, sampling_rate=1.5)
    with pytest.raises(ValueError, match="batch_size must be an integer"):
        ts(DATA, None, sequence_length=3, batch_size=0)
    with pytest.raises(ValueError, match="start_index must be lower than the length of data"):
        ts(DATA, None, sequence_length=3, start_index=100)
    with pytest.raises(ValueError, match="end_index must be in"):
        ts(DATA, None, sequence_length=3, start_index=10, end_index=5)
    with pytest.raises(ValueError, match="no window of sequence_length 50 at sampling_rate 3"):
        ts(DATA, None, sequence_length=50, sampling_rate=3)
    with pytest.raises(bf.DataError, match="numeric arrays"):
        ts(np.array(["a", "b", "c"]), None, sequence_length=2)
    with pytest.raises(bf.DataError, match="targets has 5 rows"):
        ts(DATA, TARGETS[:5], sequence_length=3, start_index=10)
    with pytest.raises(IndexError, match="batch index 7 out of range"):
        ts(DATA, None, sequence_length=3, batch_size=32)[7]


WEATHER = '''
# keras.io/examples/timeseries/timeseries_weather_forecasting: 7 normalized features sampled every 6 steps
# over the past 720 into windows, the target 72 steps ahead, an LSTM(32) (the climate CSV replaced by a
# synthetic series, pandas' .values / .iloc by array slices)
rng = np.random.default_rng(0)
features = rng.standard_normal((1600, 7)).astype("float32").cumsum(axis=0)
split_fraction = 0.715
train_split = int(split_fraction * int(features.shape[0]))
step = 6
past = 120
future = 12
learning_rate = 0.001
batch_size = 64
epochs = 2

def normalize(data, train_split):
    data_mean = data[:train_split].mean(axis=0)
    data_std = data[:train_split].std(axis=0)
    return (data - data_mean) / data_std

features = normalize(features, train_split)
train_data = features[0:train_split]
val_data = features[train_split:]
start = past + future
end = start + train_split
x_train = train_data[:, [i for i in range(7)]]
y_train = features[start:end][:, [1]]
sequence_length = int(past / step)
dataset_train = keras.preprocessing.timeseries_dataset_from_array(
    x_train, y_train, sequence_length=sequence_length, sampling_rate=step, batch_size=batch_size)
x_end = len(val_data) - past - future
label_start = train_split + past + future
x_val = val_data[:x_end][:, [i for i in range(7)]]
y_val = features[label_start:][:, [1]]
dataset_val = keras.preprocessing.timeseries_dataset_from_array(
    x_val, y_val, sequence_length=sequence_length, sampling_rate=step, batch_size=batch_size)
for batch in dataset_train.take(1):
    inputs, targets = batch
inputs = keras.layers.Input(shape=(inputs.shape[1], inputs.shape[2]))
lstm_out = keras.layers.LSTM(32)(inputs)
outputs = keras.layers.Dense(1)(lstm_out)
model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=learning_rate), loss="mse")
path_checkpoint = out + "/model_checkpoint.weights.h5"
es_callback = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=5)
modelckpt_callback = keras.callbacks.ModelCheckpoint(monitor="val_loss", filepath=path_checkpoint, verbose=0,
                                                     save_weights_only=True, save_best_only=True)
w0 = model.get_weights()
history = model.fit(dataset_train, epochs=epochs, validation_data=dataset_val,
                    callbacks=[es_callback, modelckpt_callback], verbose=0)
preds = [model.predict(x, verbose=0)[0] for x, y in dataset_val.take(5)]
'''


def test_keras_io_weather_forecasting_runs_unchanged_and_trains_as_keras(tmp_path):
    """Unshuffled windows: from Keras 3's initial weights the same losses and predictions as Keras 3."""
    k = recorded.load("timeseries")
    b = {"keras": bf, "np": np, "out": str(tmp_path)}
    build, train = WEATHER.split("w0 = model.get_weights()")
    exec(build, b)
    b["model"].set_weights(list(recorded.batches(k, "weather/w0")[0]))
    exec(train, b)
    assert sorted(b["history"].history) == sorted(recorded.value(k, "weather/history_keys")) == ["loss", "val_loss"]
    np.testing.assert_allclose(b["history"].history["loss"], k["weather/loss"], rtol=2e-4)
    np.testing.assert_allclose(b["history"].history["val_loss"], k["weather/val_loss"], rtol=2e-4)
    np.testing.assert_allclose(np.array(b["preds"]), k["weather/preds"], rtol=1e-3, atol=1e-4)
    assert os.listdir(tmp_path) == recorded.value(k, "weather/files") == ["model_checkpoint.weights.h5"]
