"""Failures of the data itself: a user's exception from a Sequence or a
generator reaches the caller as it is (as in Keras 3), with the batch index as
a note; a memory-mapped file truncated under a run raises DataError naming the
file and its sizes instead of killing the process with SIGBUS."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers

rng = np.random.default_rng(5)
X = rng.standard_normal((96, 6)).astype(np.float32)
Y = rng.integers(0, 3, 96)


class ShardMissing(Exception):
    """A user's own exception type."""


def model():
    bf.utils.set_random_seed(7)
    m = bf.Sequential([layers.Dense(8, activation="relu", input_shape=(6,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


class Shards(bf.utils.PyDataset):
    """Batches of 16; batch `fail_at` raises the user's ShardMissing."""

    def __init__(self, fail_at=None, n=6):
        super().__init__()
        self.fail_at, self.n = fail_at, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ShardMissing(f"shard {i} is missing")
        return X[i * 16:(i + 1) * 16], Y[i * 16:(i + 1) * 16]


def _three_batch_weights():
    ref = model()
    ref.fit(Shards(n=3), epochs=1, shuffle=False, verbose=0)
    return ref.get_weights()


def test_user_exception_from_a_sequence_arrives_itself_with_the_batch_as_a_note():
    m = model()
    with pytest.raises(ShardMissing, match="shard 3 is missing") as ei:
        m.fit(Shards(fail_at=3), epochs=1, shuffle=False, verbose=0)
    assert not isinstance(ei.value, bf.DataError)
    assert "boundfit: raised by the data source while fetching batch 3" in ei.value.__notes__
    # the weights of the last completed step (batch 2), and the model trains on
    for a, b in zip(m.get_weights(), _three_batch_weights()):
        np.testing.assert_array_equal(a, b)
    m.fit(Shards(), epochs=1, verbose=0)


def test_user_exception_from_a_generator_arrives_itself_with_the_batch_as_a_note():
    def batches():
        for i in range(6):
            if i == 3:
                raise ShardMissing("the reader lost its connection")
            yield X[i * 16:(i + 1) * 16], Y[i * 16:(i + 1) * 16]
    m = model()
    with pytest.raises(ShardMissing, match="lost its connection") as ei:
        m.fit(batches(), steps_per_epoch=6, epochs=1, verbose=0)
    assert ei.value.__notes__ == ["boundfit: raised by the data source while fetching batch 3"]
    for a, b in zip(m.get_weights(), _three_batch_weights()):
        np.testing.assert_array_equal(a, b)


def test_user_exception_at_the_first_batch_leaves_the_model_untouched():
    m = model()
    w0 = m.get_weights()
    for call in (lambda: m.fit(Shards(fail_at=0), verbose=0), lambda: m.evaluate(Shards(fail_at=0), verbose=0),
                 lambda: m.predict(Shards(fail_at=0), verbose=0)):
        with pytest.raises(ShardMissing) as ei:
            call()
        assert ei.value.__notes__[-1] == "boundfit: raised by the data source while fetching batch 0"
    for a, b in zip(m.get_weights(), w0):
        np.testing.assert_array_equal(a, b)


def test_a_malformed_batch_is_still_a_data_error():
    class Short(Shards):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return (x, y[:3]) if i == 2 else (x, y)
    with pytest.raises(bf.DataError, match="batch 2: x and y have different lengths") as ei:
        model().fit(Short(), epochs=1, shuffle=False, verbose=0)
    assert ei.value.batch_index == 2
