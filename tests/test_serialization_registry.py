"""keras.saving's registry and dict forms as Keras 3's: register_keras_serializable
names "package>Name", custom_object_scope shows objects inside its block only,
a registered custom layer in a Keras file loads without custom_objects, and
serialize_keras_object / deserialize_keras_object give and take Keras's own
dicts (Keras's side recorded: helpers/keras_recorded.py)."""

import numpy as np
import pytest

import boundfit as bf
from helpers.keras_recorded import case, keras_file
from keras_ref import load


def test_register_names_package_and_class_and_needs_get_config():
    @bf.saving.register_keras_serializable("demo_pkg")
    class Doubler(bf.layers.Layer):
        def call(self, x):
            return x * 2.0

    @bf.utils.register_keras_serializable(name="triple")
    def triple(x):
        return 3 * x

    try:
        assert bf.saving.get_registered_name(Doubler) == "demo_pkg>Doubler"
        assert bf.saving.get_registered_object("demo_pkg>Doubler") is Doubler
        assert bf.utils.get_registered_object("Custom>triple") is triple
        assert bf.saving.get_registered_name(np.mean) == "mean"   # not registered: its __name__
        assert bf.saving.get_registered_object("nothing>here") is None
        with pytest.raises(ValueError, match="get_config"):
            bf.saving.register_keras_serializable()(type("NoConfig", (), {}))
    finally:
        for k in ("demo_pkg>Doubler", "Custom>triple"):
            bf.saving.get_custom_objects().pop(k)


def test_custom_object_scope_shows_its_objects_inside_the_block_only():
    marker = object()
    assert bf.saving.get_registered_object("scoped") is None
    with bf.utils.custom_object_scope({"scoped": marker}) as scope:
        assert bf.saving.get_registered_object("scoped") is marker
        assert "scoped" not in bf.saving.get_custom_objects() and scope.custom_objects == {"scoped": marker}
        with bf.saving.CustomObjectScope({"inner": 1}):   # Keras replaces the scope's dict
            assert bf.saving.get_registered_object("scoped") is None
        assert bf.saving.get_registered_object("scoped") is marker
    assert bf.saving.get_registered_object("scoped") is None
    with pytest.raises(TypeError, match="custom_objects"):
        bf.saving.custom_object_scope(["not", "a", "dict"])


class Scale(bf.layers.Layer):
    """x * factor, a custom layer with one argument"""

    def __init__(self, factor=1.0, **kw):
        super().__init__(**kw)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def _keras_model_with_registered_layer(path):
    keras = load()

    @keras.saving.register_keras_serializable("demo")
    class Scale(keras.layers.Layer):   # noqa: F811 - Keras's twin of the class above
        def __init__(self, factor=1.0, **kw):
            super().__init__(**kw)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    x = keras.Input((3,))
    m = keras.Model(x, keras.layers.Dense(2)(Scale(2.5)(x)))
    m.save(path)
    return {"predict": m.predict(X, verbose=0)}


def test_a_registered_custom_layer_in_a_keras_file_loads_without_custom_objects(tmp_path):
    ref = keras_file(tmp_path / "m.keras", _keras_model_with_registered_layer)["predict"]
    with pytest.raises(ValueError, match="Scale"):
        bf.models.load_model(tmp_path / "m.keras")   # not registered: the class is unknown
    bf.saving.register_keras_serializable("demo")(Scale)
    try:
        m = bf.models.load_model(tmp_path / "m.keras")
    finally:
        bf.saving.get_custom_objects().pop("demo>Scale")
    assert isinstance(m.layers[1], Scale) and m.layers[1].factor == 2.5
    np.testing.assert_allclose(m.predict(X, verbose=0), ref, rtol=1e-6, atol=1e-6)
    with bf.saving.custom_object_scope({"Scale": Scale}):   # or by class name in a scope
        assert isinstance(bf.models.load_model(tmp_path / "m.keras").layers[1], Scale)


OBJECTS = {
    "dense": lambda K: K.layers.Dense(3, activation="relu", kernel_regularizer=K.regularizers.l2(0.01), name="d"),
    "glorot": lambda K: K.initializers.GlorotUniform(seed=1),
    "l1l2": lambda K: K.regularizers.L1L2(l1=0.1, l2=0.2),
    "maxnorm": lambda K: K.constraints.MaxNorm(2.0),
    "mse": lambda K: K.losses.MeanSquaredError(),
    "relu": lambda K: K.activations.relu,
    "adam": lambda K: K.optimizers.Adam(0.01),
    "nested": lambda K: {"a": [K.initializers.Zeros(), 3, "s"], "b": None},
}


def _keras_forms():
    keras = load()
    ours = {k: bf.saving.serialize_keras_object(make(bf)) for k, make in OBJECTS.items()}
    out = {}
    for k, make in OBJECTS.items():
        theirs = keras.saving.serialize_keras_object(make(keras))
        back = keras.saving.deserialize_keras_object(ours[k])   # Keras takes boundfit's form
        out[k] = {"form": _json(theirs), "back_type": type(back).__name__ if not callable(back) or
                  isinstance(back, type) or hasattr(back, "get_config") else back.__name__,
                  "back_config": _json(back.get_config() if hasattr(back, "get_config") else None)}
    return out


def _json(v):
    import json
    return json.dumps(v, sort_keys=True, default=str)


def test_dict_forms_go_both_ways_with_keras():
    import json
    k = case(_keras_forms)
    for name, make in OBJECTS.items():
        theirs = json.loads(k[name]["form"])
        ours = bf.saving.deserialize_keras_object(theirs)   # Keras's form, read here
        if name == "nested":
            assert isinstance(ours["a"][0], bf.initializers.Zeros) and ours["a"][1:] == [3, "s"]
            continue
        if name == "relu":
            assert ours is bf.activations.relu and k[name]["back_type"] == "relu"
            continue
        assert type(ours).__name__ == type(make(bf)).__name__ == k[name]["back_type"], name
        again = bf.saving.serialize_keras_object(ours)
        assert again["class_name"] == theirs["class_name"]
        if name == "dense":   # the layer's own options survive both ways
            assert ours.units == 3 and ours.kernel_regularizer.l2 == pytest.approx(0.01)
            assert json.loads(k[name]["back_config"])["units"] == 3


def test_deserialize_names_what_it_does_not_know():
    with pytest.raises(ValueError, match="'Mystery'"):
        bf.saving.deserialize_keras_object({"module": "somewhere", "class_name": "Mystery", "config": {}})
    with pytest.raises(TypeError, match="get_config"):
        bf.saving.serialize_keras_object(object())
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(bf.saving.deserialize_keras_object(bf.saving.serialize_keras_object(arr)), arr)
