"""Regenerates python/boundfit/datasets/digits.npz, the 8x8 handwritten digits
that boundfit ships (boundfit.datasets.digits), from scikit-learn's copy of
them (sklearn.datasets.load_digits: the 1,797 images of the test set of UCI's
"Optical Recognition of Handwritten Digits", CC BY 4.0).

The split is fixed here, once: a permutation drawn with seed 42, its first
80% (1,437 images) for training, the rest (360) for testing.

    python tools/make_digits.py

Needs scikit-learn (`pip install scikit-learn`); boundfit never imports this."""

import os

import numpy as np
from sklearn.datasets import load_digits

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "boundfit", "datasets", "digits.npz")


def main():
    d = load_digits()
    x, y = d.images.astype(np.uint8), d.target.astype(np.uint8)     # pixels 0..16, labels 0..9
    assert np.array_equal(x, d.images) and np.array_equal(y, d.target)
    idx = np.random.default_rng(42).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = idx[:cut], idx[cut:]
    np.savez_compressed(os.path.normpath(OUT), x_train=x[train], y_train=y[train], x_test=x[test], y_test=y[test])
    print(f"wrote {os.path.normpath(OUT)}: train {len(train)}, test {len(test)}, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
