"""keras.applications.resnet50: ResNet50 with ResNet's preprocessing (resnet.py)."""

from .resnet import ResNet50, decode_predictions, preprocess_input

__all__ = ["ResNet50", "decode_predictions", "preprocess_input"]
