"""Layer and model names counted from the start in each test of a module
that imports this fixture: a file boundfit writes (the names in its config)
is then the same whichever tests ran before it in the process (-k, -n 2), so
the Keras results recorded from it (helpers/keras_recorded.case(files=...)
keys them by the file's contents) are found again instead of recomputed."""

import pytest

from boundfit.layers import layer


@pytest.fixture(autouse=True)
def fresh_layer_names():
    layer._counters.clear()
