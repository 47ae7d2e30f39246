"""keras.backend: the few settings Keras programs read (epsilon for ops-written
losses and distances, floatx, image_data_format); boundfit runs in float32,
channels_last."""


def epsilon():
    return 1e-7


def floatx():
    return "float32"


def image_data_format():
    return "channels_last"


def backend():
    return "boundfit"
