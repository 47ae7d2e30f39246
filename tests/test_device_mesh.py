"""keras.distribution's DeviceMesh (and a DataParallel over a 1-D one), get_device_count, and the model-parallel
names refused by name, in one process (a group of one CPU, as Keras on one CPU)."""

import pytest

import boundfit as bf
import keras_ref
from helpers import keras_recorded


def test_device_count_and_mesh_as_keras():
    def of(k):
        d = k.distribution
        mesh = d.DeviceMesh((1,), ["batch"], d.list_devices())
        return dict(count=d.get_device_count(), devices=[str(x) for x in d.list_devices()],
                    shape=list(mesh.shape), names=list(mesh.axis_names), mesh_devices=[str(x) for x in mesh.devices])
    assert of(bf) == keras_recorded.case(lambda: of(keras_ref.load()))


def test_data_parallel_over_a_one_dimensional_mesh():
    d = bf.distribution
    dp = d.DataParallel(device_mesh=d.DeviceMesh((1,), ["batch"]))
    assert dp.devices == d.list_devices()
    with pytest.raises(ValueError, match="1-D DeviceMesh"):
        d.DataParallel(device_mesh=d.DeviceMesh((1, 1), ["batch", "model"]))
    with pytest.raises(ValueError, match="not both"):
        d.DataParallel(device_mesh=d.DeviceMesh((1,), ["batch"]), devices=d.list_devices())


@pytest.mark.parametrize("args, match", [(((2,), ["batch"]), "does not match the number of devices"),
                                         (((1,), ["a", "b"]), "cannot be mismatched"),
                                         (((0,), ["a"]), "positive integers")])
def test_bad_meshes_raise(args, match):
    with pytest.raises(ValueError, match=match):
        bf.distribution.DeviceMesh(*args)


@pytest.mark.parametrize("name", ["ModelParallel", "LayoutMap", "TensorLayout"])
def test_model_parallel_names_are_refused_by_name(name):
    with pytest.raises(NotImplementedError, match=f"distribution.{name} is not supported.*DataParallel"):
        getattr(bf.distribution, name)(None)
    with pytest.raises(NotImplementedError, match="distribute_tensor"):
        bf.distribution.distribute_tensor([1.0], None)
