"""keras.applications.vgg16 and vgg19's builder: VGG16, its blocks of 3x3
convolutions named as Keras 3 names them (vgg19.py adds a layer per deep
block)."""

from .. import layers
from . import imagenet_utils
from .builder import KERAS_WEIGHTS, check_weights, finish, image_input, pooled
from .imagenet_utils import validate_activation


def vgg(convs, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    """Keras's VGG16 / VGG19: five blocks of convs[i] convolutions and a max pooling, the 3-Dense top."""
    check_weights(weights, include_top, classes, KERAS_WEIGHTS + f"{name}/")
    img_input, _ = image_input(input_tensor, input_shape, 224, 32, include_top, weights)
    x = img_input
    for b, (n, filters) in enumerate(zip(convs, (64, 128, 256, 512, 512)), start=1):
        for c in range(1, n + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same", name=f"block{b}_conv{c}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{b}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = pooled(x, pooling, None, None)
    return finish(img_input, input_tensor, x, name, weights)


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
          classifier_activation="softmax", name="vgg16"):
    """Keras 3's VGG16 (weights None or a local file)."""
    return vgg((2, 2, 3, 3, 3), include_top, weights, input_tensor, input_shape, pooling, classes,
               classifier_activation, name)


def preprocess_input(x, data_format=None):
    """VGG's preprocessing: imagenet_utils.preprocess_input in "caffe" mode."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, class_index=None):
    """imagenet_utils.decode_predictions (a local class index file: boundfit downloads nothing)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index=class_index)
