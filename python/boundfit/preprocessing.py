"""keras.preprocessing: the data helpers Keras 3 keeps under that name."""

import types

from .image_folder import image_dataset_from_directory  # noqa: F401 - keras.preprocessing's name
from .text_folder import text_dataset_from_directory  # noqa: F401 - keras.preprocessing's name
from .timeseries_data import timeseries_dataset_from_array  # noqa: F401 - keras.preprocessing's name
from .utils import pad_sequences

sequence = types.SimpleNamespace(pad_sequences=pad_sequences)
