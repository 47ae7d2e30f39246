"""keras.preprocessing: the data helpers Keras 3 keeps under that name."""

import types

from .image_folder import image_dataset_from_directory  # noqa: F401 - keras.preprocessing's name
from .image_io import array_to_img, img_to_array, load_img, save_img, smart_resize
from .text_folder import text_dataset_from_directory  # noqa: F401 - keras.preprocessing's name
from .timeseries_data import timeseries_dataset_from_array  # noqa: F401 - keras.preprocessing's name
from .utils import pad_sequences

sequence = types.SimpleNamespace(pad_sequences=pad_sequences)
image = types.SimpleNamespace(array_to_img=array_to_img, img_to_array=img_to_array, load_img=load_img,
                              save_img=save_img, smart_resize=smart_resize)
