"""keras.preprocessing: the data helpers Keras 3 keeps under that name."""

import types

from .timeseries_data import timeseries_dataset_from_array  # noqa: F401 - keras.preprocessing's name
from .utils import pad_sequences

sequence = types.SimpleNamespace(pad_sequences=pad_sequences)
