"""The 8x8 handwritten digits, shipped with boundfit (digits.npz, 47 KB), loaded
as keras.datasets loaders load theirs.

The images are the 1,797 of the test set of UCI's "Optical Recognition of
Handwritten Digits" (E. Alpaydin, C. Kaynak, 1998; CC BY 4.0), as
scikit-learn ships them: each pixel counts the ink in a 4x4 block of a 32x32
bitmap (0..16). The split is fixed: 1,437 training and 360 test images, a
seed-42 permutation's first 80% and the rest (tools/make_digits.py made the
file). Source and licence: README.md beside this file."""

import os

import numpy as np

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.npz")


def load_data():
    """Returns ((x_train, y_train), (x_test, y_test)): uint8 images of shape
    (n, 8, 8) with pixels 0..16, and uint8 labels 0..9 of shape (n,)."""
    with np.load(_PATH) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
