"""keras.distribution's device meshes and layouts: DeviceMesh (a data-parallel DataParallel takes a 1-D one),
get_device_count; the model-parallel names (ModelParallel, LayoutMap, TensorLayout, distribute_tensor) are refused
by name: boundfit replicates the model on every rank and splits the data, it does not shard weights."""

import numpy as np

from ..refusal import refused, refused_function
from ..runtime.dist_group import list_devices


def get_device_count(device_type=None):
    """The number of devices of the group (one CPU per rank)."""
    return len(list_devices(device_type))


class DeviceMesh:
    """Keras's DeviceMesh: devices (default: the group's) laid out in `shape`, its axes named by `axis_names`."""

    def __init__(self, shape, axis_names, devices=None):
        shape, axis_names = tuple(shape), list(axis_names)
        if not shape or any(not isinstance(s, int) or s < 1 for s in shape):
            raise ValueError(f"DeviceMesh: shape must be positive integers, got {shape}")
        if len(axis_names) != len(shape):
            raise ValueError(f"Shape and axis_names cannot be mismatched. Received: shape={shape}, "
                             f"axis_names={axis_names}")
        devices = np.array(list_devices() if devices is None else devices)
        if int(np.prod(shape)) != devices.size:
            raise ValueError(f"Shape does not match the number of devices. Received: shape={shape}; "
                             f"devices.shape={devices.shape}")
        self.shape, self.axis_names, self.devices = shape, axis_names, devices.reshape(shape)

    def __repr__(self):
        return f"<DeviceMesh shape={self.shape} axis_names={self.axis_names}>"


_WHY = ("it replicates the model on every rank and splits the data (DataParallel); sharding weights across "
        "devices is not implemented")
ModelParallel = refused("keras.distribution.ModelParallel", _WHY)
LayoutMap = refused("keras.distribution.LayoutMap", _WHY)
TensorLayout = refused("keras.distribution.TensorLayout", _WHY)
distribute_tensor = refused_function("keras.distribution.distribute_tensor", _WHY)
