"""keras.callbacks with Keras 3 names, arguments and defaults."""

from .base import Callback, CallbackList, History, LambdaCallback, ProgbarLogger
from .early_stopping import EarlyStopping
from .checkpoint import BackupAndRestore, ModelCheckpoint
from .lr import LearningRateScheduler, ReduceLROnPlateau
from .logging import CSVLogger, TerminateOnNaN
from .ema import SwapEMAWeights
from .remote import OrbaxCheckpoint, RemoteMonitor, TensorBoard

__all__ = ["Callback", "CallbackList", "History", "LambdaCallback", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "BackupAndRestore", "LearningRateScheduler", "ReduceLROnPlateau", "CSVLogger",
           "TerminateOnNaN", "SwapEMAWeights", "RemoteMonitor", "TensorBoard", "OrbaxCheckpoint"]
