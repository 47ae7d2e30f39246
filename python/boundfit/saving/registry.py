"""What saving/ builds objects from Keras 3 files with: the layer classes by
Keras class name (every class registered with layers.layer.keras_config), and
the model classes, which the models package registers when it is imported
(saving/ sits below models/ and does not import it)."""

from .. import layers as _layers  # every family module: their keras_config registrations are made

_MODELS = {}


def keras_layers():
    """{Keras class name: boundfit layer class} for every layer with a Keras config."""
    return {cls.__name__: cls for cls in _layers.layer.keras_layer_classes()}


def register_models(model, sequential):
    """models/ registers its Model and Sequential classes here."""
    _MODELS["Model"], _MODELS["Sequential"] = model, sequential


def model_classes():
    """(Model, Sequential): what a model file builds and what a model is checked against."""
    return _MODELS["Model"], _MODELS["Sequential"]
