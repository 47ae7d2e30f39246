"""keras.backend: the few settings Keras programs read (epsilon for ops-written
losses and distances, floatx, image_data_format); boundfit runs in float32,
channels_last."""


def epsilon():
    """Keras's fuzz factor, 1e-7."""
    return 1e-7


def floatx():
    """The default float type, 'float32' (the engine computes in float32)."""
    return "float32"


def image_data_format():
    """The image layout, 'channels_last'."""
    return "channels_last"


def backend():
    """The backend's name, 'boundfit'."""
    return "boundfit"
