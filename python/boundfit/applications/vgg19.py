"""keras.applications.vgg19: VGG19 on vgg16.py's builder (four convolutions in blocks 3 to 5)."""

from .vgg16 import decode_predictions, preprocess_input, vgg


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
          classifier_activation="softmax", name="vgg19"):
    """Keras 3's VGG19 (weights None or a local file)."""
    return vgg((2, 2, 4, 4, 4), include_top, weights, input_tensor, input_shape, pooling, classes,
               classifier_activation, name)


__all__ = ["VGG19", "decode_predictions", "preprocess_input"]
