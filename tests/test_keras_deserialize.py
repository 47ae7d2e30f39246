"""keras.regularizers.deserialize and keras.constraints.deserialize: what
Keras 3's serialize() writes gives the same object's config in boundfit, a
user's class comes from custom_objects, and an unknown one is refused by
name."""

import pytest

import boundfit as bf
from helpers.keras_recorded import case
from keras_ref import load

OBJECTS = [("regularizers", "L1", dict(l1=0.3)), ("regularizers", "L1L2", dict(l1=0.1, l2=0.2)),
           ("constraints", "MaxNorm", dict(max_value=2.0, axis=1)), ("constraints", "MinMaxNorm",
                                                                     dict(min_value=0.5, max_value=1.5, rate=0.5))]


def test_keras_serialized_regularizers_and_constraints_deserialize_to_the_same_config():
    def compute():
        keras = load()
        return [getattr(keras, mod).serialize(getattr(getattr(keras, mod), cls)(**kw)) for mod, cls, kw in OBJECTS]

    for (mod, cls, kw), config in zip(OBJECTS, case(compute)):
        got = getattr(bf, mod).deserialize(config)
        assert type(got).__name__ == cls and got.get_config() == config["config"], cls


def test_deserialize_takes_custom_objects_and_refuses_unknown_names():
    class Scaled(bf.regularizers.L2):
        pass

    got = bf.regularizers.deserialize({"class_name": "Scaled", "config": {"l2": 0.5}}, custom_objects={"Scaled": Scaled})
    assert isinstance(got, Scaled) and got.l2 == 0.5
    with pytest.raises(ValueError, match="Nope"):
        bf.regularizers.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(ValueError, match="Nope"):
        bf.constraints.deserialize({"class_name": "Nope", "config": {}})
