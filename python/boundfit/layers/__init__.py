"""Keras-style layers, one module per family. Each layer describes itself as a
spec dict for the engine (kind ids from _core.LAYER_KINDS); the engine owns
weights and compute. Calling a layer on symbolic tensors (boundfit.Input)
records a node of a graph and returns a symbolic tensor (node.py).

A new layer: its class goes in the family's module (or a new one, imported
here), and its Keras 3 config is registered there with @keras_config
(layer.py); see CONTRIBUTING_python.md."""

from .activation import ELU, LeakyReLU, PReLU, ReLU, Softmax
from .args import engine_kinds
from .attention import MultiHeadAttention
from .audio import MelSpectrogram, STFTSpectrogram
from .group_query_attention import GroupQueryAttention
from .input_spec import InputSpec
from .reversible_embedding import ReversibleEmbedding
from .serialize import deserialize, serialize
from .spectral import SpectralNormalization
from .wrapper import Wrapper
from .categorical import CategoryEncoding, Discretization
from .augmentation import RandomContrast, RandomCrop, RandomFlip, RandomRotation, RandomTranslation, RandomZoom
from .cropping import (CenterCrop, Resizing, Cropping1D, Cropping2D, Cropping3D, UpSampling1D, UpSampling3D, ZeroPadding1D,
                       ZeroPadding3D)
from .color import RandomBrightness, RandomGrayscale
from .color_aug import (AutoContrast, RandomColorDegeneration, RandomColorJitter, RandomHue, RandomInvert,
                        RandomPosterization, RandomSaturation, RandomSharpness, Solarization)
from .conv import (Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Convolution1D, Convolution1DTranspose,
                   Convolution2DTranspose, DepthwiseConv2D, SeparableConv2D)
from .adaptive_pooling import (AdaptiveAveragePooling1D, AdaptiveAveragePooling2D, AdaptiveAveragePooling3D,
                               AdaptiveMaxPooling1D, AdaptiveMaxPooling2D, AdaptiveMaxPooling3D)
from .conv import (Conv3D, Conv3DTranspose, Convolution2D, Convolution3D, Convolution3DTranspose, DepthwiseConv1D,
                   SeparableConv1D, SeparableConvolution1D, SeparableConvolution2D)
from .conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from .core import Activation, ActivityRegularization, Dense, Identity, Lambda
from .dot import Dot
from .dot_attention import AdditiveAttention, Attention
from .einsum_dense import EinsumDense
from .draw import RandomDraw  # keras.random on symbolic shapes (a graph piece, not a Keras layer)
from .embedding import Embedding
from .hashing import HashedCrossing, Hashing
from .emath import Binary, MatMul, Unary, Weight  # graph pieces of keras.ops math (not Keras layers)
from .reduce import BatchReduce, Reduce  # keras.ops' reductions (graph pieces, not Keras layers)
from .input_layer import Input, InputLayer
from .layer import Layer
from .lookup import IntegerLookup, StringLookup
from .masking import Masking, SeqMask  # SeqMask: a mask computed in the graph (a graph piece, not a Keras layer)
from . import custom_masks  # noqa: F401  (registers a custom layer's call with Keras's masks: layer._MASKS)
from .merge import (Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract, add, average, concatenate,
                    maximum, minimum, multiply, subtract)
from .normalization import BatchNormalization, LayerNormalization
from .norms import GroupNormalization, RMSNormalization, UnitNormalization
from .pipeline import Pipeline
from .pooling import (AveragePooling1D, AveragePooling2D, AvgPool1D, GlobalAveragePooling1D, GlobalAveragePooling2D,
                      GlobalAvgPool1D, GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPooling1D, GlobalMaxPooling2D,
                      MaxPool1D, MaxPooling1D, MaxPooling2D)
from .pooling import (AveragePooling3D, AvgPool2D, AvgPool3D, GlobalAveragePooling3D, GlobalAvgPool2D, GlobalAvgPool3D,
                      GlobalMaxPool3D, GlobalMaxPooling3D, MaxPool2D, MaxPool3D, MaxPooling3D)
from .preprocessing import Normalization, Rescaling
from .erase_blur import RandomErasing, RandomGaussianBlur
from ..refusal import refused as _refused
_OTHER = "it wraps another framework's model ({}), which boundfit's engine cannot run. Rebuild it from boundfit layers"
FlaxLayer = _refused("keras.layers.FlaxLayer", _OTHER.format("a Flax module"))
JaxLayer = _refused("keras.layers.JaxLayer", _OTHER.format("a JAX function"))
TorchModuleWrapper = _refused("keras.layers.TorchModuleWrapper", _OTHER.format("a torch.nn.Module"))
TFSMLayer = _refused("keras.layers.TFSMLayer", _OTHER.format("a TensorFlow SavedModel"))
from .batch_mix import CutMix, MaxNumBoundingBoxes, MixUp
from .equalize import Equalization
from .shear import RandomShear
from .refused_aug import (AugMix, ContrastLimitedAdaptiveHistogramEqualization, RandAugment, RandomElasticTransform,
                          RandomPerspective)  # refused by name
from .recurrent import GRU, LSTM, Bidirectional, SimpleRNN
from .rnn import RNN, GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from .regularization import Dropout, GaussianDropout, GaussianNoise
from .spatial_dropout import AlphaDropout, SpatialDropout1D, SpatialDropout2D, SpatialDropout3D
from .text import TextVectorization
from .time_distributed import TimeDistributed
from .reshaping import (Const, Flatten, Permute, RepeatVector, Reshape, Slice, UpSampling2D,  # Const, Slice: graph
                        ZeroPadding2D)  # pieces of traced calls and ops (not Keras layers)
from .switch import Switch  # a custom layer's training / inference traces (a graph piece, not a Keras layer)

# the engine's layer kind numbers (csrc/core/model.c bf_layer_kind_names)
(DENSE, CONV2D, MAXPOOL, AVGPOOL, GAP, RESHAPE, DROPOUT, BATCHNORM, ACTIVATION,
 ADD, SUBTRACT, MULTIPLY, AVERAGE, MAXIMUM, MINIMUM, CONCAT) = engine_kinds(
    "DENSE CONV2D MAXPOOL AVGPOOL GAP RESHAPE DROPOUT BATCHNORM ACTIVATION "
    "ADD SUBTRACT MULTIPLY AVERAGE MAXIMUM MINIMUM CONCAT")

__all__ = [
           "GroupQueryAttention", "InputSpec", "ReversibleEmbedding", "SpectralNormalization", "Wrapper",
           "deserialize", "serialize",
           "AutoContrast", "RandomColorDegeneration", "RandomColorJitter", "RandomHue", "RandomInvert",
           "RandomPosterization", "RandomSaturation", "RandomSharpness", "Solarization",
           "AugMix", "ContrastLimitedAdaptiveHistogramEqualization", "CutMix", "Equalization", "MaxNumBoundingBoxes",
           "MixUp", "RandAugment", "RandomElasticTransform", "RandomErasing", "RandomGaussianBlur",
           "RandomPerspective", "RandomShear", "Pipeline",
           "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D", "AdaptiveMaxPooling1D",
           "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D",
           "AveragePooling3D", "AvgPool2D", "AvgPool3D", "Conv3D", "Conv3DTranspose", "Convolution2D", "Convolution3D",
           "Convolution3DTranspose", "DepthwiseConv1D", "GlobalAveragePooling3D", "GlobalAvgPool2D", "GlobalAvgPool3D",
           "GlobalMaxPool3D", "GlobalMaxPooling3D", "MaxPool2D", "MaxPool3D", "MaxPooling3D", "SeparableConv1D",
           "SeparableConvolution1D", "SeparableConvolution2D",
           "AdditiveAttention", "Attention", "EinsumDense", "TimeDistributed",
           "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D",
           "RNN", "GRUCell", "LSTMCell", "SimpleRNNCell", "StackedRNNCells",
           "ActivityRegularization", "AlphaDropout", "CenterCrop", "Masking", "RandomBrightness", "RandomGrayscale", "Resizing", "Cropping1D", "Cropping2D", "Cropping3D", "GroupNormalization", "Identity", "RMSNormalization", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "UnitNormalization", "UpSampling1D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding3D",
           "Activation", "Add", "Average", "AveragePooling1D", "AveragePooling2D", "AvgPool1D",
           "BatchNormalization", "Bidirectional", "CategoryEncoding", "Concatenate", "Conv1D", "Conv1DTranspose", "Conv2D",
           "Conv2DTranspose", "Convolution1D", "Convolution1DTranspose", "Convolution2DTranspose", "Dense", "DepthwiseConv2D", "Discretization", "Dot", "Dropout", "ELU", "Embedding", "Flatten", "GRU",
           "GaussianDropout", "GaussianNoise", "HashedCrossing", "Hashing", "IntegerLookup",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAvgPool1D", "GlobalMaxPool1D",
           "GlobalMaxPool2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "Input", "InputLayer", "LSTM", "Lambda", "Layer",
           "SeparableConv2D",
           "LayerNormalization", "LeakyReLU", "MaxPool1D", "MaxPooling1D", "MaxPooling2D", "Maximum", "Minimum",
           "MultiHeadAttention", "Multiply", "Normalization", "Permute", "PReLU", "RandomContrast", "RandomCrop",
           "RandomFlip", "RandomRotation", "RandomZoom",
           "RandomTranslation", "ReLU", "RepeatVector", "Rescaling", "Reshape", "SimpleRNN", "Softmax", "StringLookup",
           "Subtract",
           "TextVectorization",
           "UpSampling2D", "ZeroPadding2D", "add", "average", "concatenate", "maximum", "minimum", "multiply",
           "subtract"]
