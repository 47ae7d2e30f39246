"""keras.applications: Keras 3's image models, built layer for layer as Keras
builds them (same layer names, order and weights, so Keras's weight files
load), one module per family as keras/src/applications is organised.
weights=None or the path of a local weights file (boundfit downloads
nothing); each module has its preprocess_input and decode_predictions.
The families boundfit does not build yet are refused by name (builder.refused)."""

from . import (densenet, efficientnet, imagenet_utils, inception_v3, mobilenet, mobilenet_v2, mobilenet_v3, resnet,
               resnet50, resnet_v2, vgg16, vgg19, xception)
from .builder import refused
from .densenet import DenseNet121, DenseNet169, DenseNet201
from .efficientnet import (EfficientNetB0, EfficientNetB1, EfficientNetB2, EfficientNetB3, EfficientNetB4,
                           EfficientNetB5, EfficientNetB6, EfficientNetB7)
from .inception_v3 import InceptionV3
from .mobilenet import MobileNet
from .mobilenet_v2 import MobileNetV2
from .mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from .resnet import ResNet50, ResNet101, ResNet152
from .resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from .vgg16 import VGG16
from .vgg19 import VGG19
from .xception import Xception

_NOT_YET = "boundfit does not build this family yet; use one of the families it builds (ResNet, VGG, MobileNet, " \
    "DenseNet, Xception, InceptionV3, EfficientNet: boundfit.applications) or write the model with boundfit.layers"
ConvNeXtTiny, ConvNeXtSmall, ConvNeXtBase, ConvNeXtLarge, ConvNeXtXLarge = (
    refused(n, _NOT_YET) for n in ("ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtXLarge"))
EfficientNetV2B0, EfficientNetV2B1, EfficientNetV2B2, EfficientNetV2B3, EfficientNetV2S, EfficientNetV2M, \
    EfficientNetV2L = (refused(n, _NOT_YET) for n in ("EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2",
                                                      "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M",
                                                      "EfficientNetV2L"))
InceptionResNetV2 = refused("InceptionResNetV2", _NOT_YET)
NASNetMobile, NASNetLarge = refused("NASNetMobile", _NOT_YET), refused("NASNetLarge", _NOT_YET)


__all__ = ["ResNet50", "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2", "ResNet152V2", "VGG16", "VGG19",
           "MobileNet", "MobileNetV2", "MobileNetV3Small", "MobileNetV3Large", "DenseNet121", "DenseNet169",
           "DenseNet201", "Xception", "InceptionV3", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2",
           "EfficientNetB3", "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7",
           "ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtXLarge", "EfficientNetV2B0",
           "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M",
           "EfficientNetV2L", "InceptionResNetV2", "NASNetMobile", "NASNetLarge",
           "densenet", "efficientnet", "imagenet_utils", "inception_v3", "mobilenet", "mobilenet_v2", "mobilenet_v3",
           "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19", "xception"]
