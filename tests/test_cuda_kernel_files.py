"""The CUDA kernel files no other test reached, against the CPU through the
public API: attention.cu (MultiHeadAttention: scores, masks, softmax and its
backward, attention dropout), layernorm.cu (LayerNormalization with and
without gamma / beta, rows wider than a block), regularize.cu (L1 / L2 /
L1L2 penalties and gradients, the max-norm / non-neg / unit-norm / min-max
constraints), merge.cu (Subtract / Maximum / Minimum / Multiply / Average),
depthwise.cu (DepthwiseConv2D), prelu.cu (PReLU), augment.cu (RandomRotation, RandomZoom,
RandomContrast, keras.random's draws), colsum.cu's one-thread-per-column fallback, loss.cu's
MEAN loss (a traced custom loss function) and ADDED loss (activity
regularizers, add_loss), and the device runs of bucketed training and of
validation batches of several lengths. Same weights, same seed, one
model per device; skipped without a usable GPU, and run on the device
emulation by tests/test_cuda_sim.py."""

import numpy as np
import pytest

import boundfit as bf
from boundfit import layers, loss_trace
from test_cuda_backend import _REASON, _assert_weights_close, _train_both
from test_variable_length import bucket_batches, bucket_model, bucket_source

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

T, D = 6, 8


def _attention_model(causal=False, mask=False, dropout=0.0, heads=2, key_dim=4):
    def build():
        x = bf.Input((T, D))
        m = bf.Input((T, T)) if mask else None
        a = layers.MultiHeadAttention(heads, key_dim, dropout=dropout)(x, x, attention_mask=m,
                                                                      use_causal_mask=causal)
        h = layers.LayerNormalization()(layers.Add()([x, a]))
        out = layers.Dense(3)(layers.Flatten()(h))
        return bf.Model([x, m] if mask else x, out)
    return build


def _attention_data(n=16, mask=False, seed=3):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, T, D)).astype(np.float32)
    y = r.standard_normal((n, 3)).astype(np.float32)
    if not mask:
        return x, y
    m = (r.random((n, T, T)) > 0.4).astype(np.float32)
    m[:, :, 0] = 1.0
    return [x, m], y


def _sgd():
    return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss="mse")


@pytest.mark.parametrize("causal,mask,dropout", [(False, False, 0.0), (True, False, 0.0), (False, True, 0.0),
                                                 (True, False, 0.25)])
def test_multi_head_attention_trains_to_the_cpu_weights_on_cuda(causal, mask, dropout):
    x, y = _attention_data(mask=mask)
    cpu, gpu, hc, hg = _train_both(_attention_model(causal, mask, dropout), _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"attention causal={causal} mask={mask}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
    np.testing.assert_allclose(gpu.predict(x, verbose=0, device="cuda"), cpu.predict(x, verbose=0), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("center,scale,width", [(True, True, 40), (False, True, 40), (True, False, 7),
                                                (True, True, 600)])
def test_layer_normalization_trains_to_the_cpu_weights_on_cuda(center, scale, width):
    """600 columns: more than the kernel's 256 threads per row."""
    r = np.random.default_rng(5)
    x = (r.standard_normal((64, 12)) * 3 + 1).astype(np.float32)
    y = r.standard_normal((64, 1)).astype(np.float32)

    def build():
        return bf.Sequential([layers.Dense(width, input_shape=(12,)),
                              layers.LayerNormalization(center=center, scale=scale, epsilon=1e-3),
                              layers.Dense(1)])

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.01), loss="mse")

    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"layer_norm center={center} scale={scale}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


@pytest.mark.parametrize("reg,con", [
    (bf.regularizers.L1(0.01), None),
    (bf.regularizers.L2(0.05), bf.constraints.MaxNorm(0.5)),
    (bf.regularizers.L1L2(l1=0.01, l2=0.02), bf.constraints.NonNeg()),
    (None, bf.constraints.UnitNorm()),
    (bf.regularizers.L2(0.01), bf.constraints.MinMaxNorm(0.2, 0.6, rate=0.5)),
])
def test_regularizers_and_constraints_train_to_the_cpu_weights_on_cuda(reg, con):
    r = np.random.default_rng(9)
    x = r.standard_normal((96, 10)).astype(np.float32)
    y = r.integers(0, 4, 96)

    def build():
        return bf.Sequential([layers.Dense(24, activation="relu", input_shape=(10,), kernel_regularizer=reg,
                                           bias_regularizer=reg, kernel_constraint=con),
                              layers.Dense(4, activation="softmax", kernel_regularizer=reg)])

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                    loss="sparse_categorical_crossentropy")

    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=32, epochs=3)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"regularizer {reg} constraint {con}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


@pytest.mark.parametrize("merge", ["Subtract", "Maximum", "Minimum", "Multiply", "Average"])
def test_merge_layers_train_to_the_cpu_weights_on_cuda(merge):
    """merge.cu's element-wise kernels, forward and backward (the selects of
    Maximum / Minimum route the gradient to the larger / smaller input)."""
    r = np.random.default_rng(13)
    x = r.standard_normal((64, 8)).astype(np.float32)
    y = r.standard_normal((64, 2)).astype(np.float32)

    def build():
        inp = bf.Input((8,))
        a = layers.Dense(6, activation="tanh")(inp)
        b = layers.Dense(6, activation="relu")(inp)
        return bf.Model(inp, layers.Dense(2)(getattr(layers, merge)()([a, b])))

    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=16, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), merge)
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_a_bias_wider_than_the_reduction_scratch_trains_to_the_cpu_weights_on_cuda():
    """colsum.cu's fallback: 270000 bias columns exceed the 2^18 doubles of the
    run workspace's scratch, so the column sums take one thread per column."""
    r = np.random.default_rng(17)
    x = r.standard_normal((4, 1)).astype(np.float32)
    y = r.standard_normal((4, 1)).astype(np.float32)

    def build():
        return bf.Sequential([layers.Dense(270000, input_shape=(1,)), layers.Dense(1)])

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=1e-4), loss="mse")

    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=4, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "270000-wide bias")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


@pytest.mark.parametrize("strides,padding,dm,bias", [(1, "valid", 1, True), (2, "same", 2, True),
                                                     ((1, 2), "same", 3, False)])
def test_depthwise_conv2d_trains_to_the_cpu_weights_on_cuda(strides, padding, dm, bias):
    """depthwise.cu: forward, the gathered input gradient, the block-tree filter gradient, the bias column sum."""
    r = np.random.default_rng(9)
    x = r.standard_normal((24, 9, 7, 5)).astype(np.float32)
    y = r.standard_normal((24, 2)).astype(np.float32)

    def build():
        return bf.Sequential([bf.Input((9, 7, 5)), layers.Conv2D(4, 1),
                              layers.DepthwiseConv2D(3, strides=strides, padding=padding, depth_multiplier=dm,
                                                     use_bias=bias, activation="relu"),
                              layers.Flatten(), layers.Dense(2)])
    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"depthwise {strides} {padding} {dm}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


@pytest.mark.parametrize("shared", [None, [1, 2], [2]])
def test_prelu_trains_to_the_cpu_weights_on_cuda(shared):
    """prelu.cu: forward, the input gradient (0 at relu's kink: the ReLU in front makes exact zeros), alpha's
    gradient as a column reduction over (P*R, Q*S) for 63, 3 and 21 alpha elements"""
    r = np.random.default_rng(10)
    x = r.standard_normal((24, 7, 3, 5)).astype(np.float32)
    y = r.standard_normal((24, 2)).astype(np.float32)

    def build():
        return bf.Sequential([bf.Input((7, 3, 5)), layers.Conv2D(3, 1, activation="relu"),
                              layers.PReLU(alpha_initializer="random_normal", shared_axes=shared), layers.Flatten(),
                              layers.Dense(2)])
    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"prelu shared_axes={shared}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_slicing_a_symbolic_tensor_trains_to_the_cpu_weights_on_cuda():
    """strided.cu through the Slice kind: the gather forward, the zero-fill and scatter backward."""
    r = np.random.default_rng(11)
    x = r.standard_normal((16, 7, 6)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)

    def build():
        inp = bf.Input((7, 6))
        h = layers.Dense(6, activation="tanh")(inp)
        z = layers.Concatenate()([h[:, -1], layers.Flatten()(h[:, 1:6:2, ::2])])
        return bf.Model(inp, layers.Dense(2)(z))
    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "slice")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_a_constant_read_in_a_custom_layer_trains_to_the_cpu_weights_on_cuda():
    """the Const kind (strided.cu's broadcast copy) under an Embedding: keras.io's position embedding"""
    class Positions(layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.tok, self.pos = layers.Embedding(30, 6), layers.Embedding(10, 6)

        def call(self, x):
            return self.tok(x) + self.pos(bf.ops.arange(0, x.shape[-1]))

    r = np.random.default_rng(12)
    x = r.integers(0, 30, (16, 10))
    y = r.standard_normal((16, 2)).astype(np.float32)

    def build():
        inp = bf.Input((10,))
        return bf.Model(inp, layers.Dense(2)(layers.GlobalAveragePooling1D()(Positions()(inp))))
    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "const")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_a_fit_over_batches_of_several_lengths_trains_to_the_cpu_weights_on_cuda():
    """variable-length inputs bucketed in one fit: one device run per length, the weights and the optimizer's
    slots moved between them (Run.sync_model / load_model), validation on the first length's engine"""
    batches = bucket_batches([5, 7, 5, 9])
    x0, y0 = bucket_batches([5], seed=9)[0]

    def adam():
        return dict(optimizer=bf.optimizers.Adam(0.02), loss="binary_crossentropy", metrics=["accuracy"])
    cpu, gpu, hc, hg = _train_both(lambda: bucket_model(bf), adam, bucket_source(bf, batches), None, epochs=2,
                                   validation_data=(x0, y0))
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "buckets")
    for key in ("loss", "accuracy", "val_loss"):
        np.testing.assert_allclose(hg.history[key], hc.history[key], rtol=1e-4)
    assert int(gpu.optimizer.iterations) == 8


def test_validation_batches_of_several_lengths_on_cuda_as_on_the_cpu():
    """validation of several lengths: the device training run closed (its weights synced back) and reopened,
    one device evaluate run per validation length"""
    def adam():
        return dict(optimizer=bf.optimizers.Adam(0.02), loss="binary_crossentropy", metrics=["accuracy"])
    cpu, gpu, hc, hg = _train_both(lambda: bucket_model(bf), adam, bucket_source(bf, bucket_batches([5, 7])), None,
                                   epochs=2, validation_data=bucket_source(bf, bucket_batches([4, 6, 4], seed=3)))
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "validation lengths")
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(hg.history[key], hc.history[key], rtol=1e-4)
    assert [r[0] for r in gpu._validation_runs] == [[(4,)], [(6,)], [(4,)]] * 2


@pytest.mark.parametrize("interp", ["bilinear", "nearest"])
def test_rotation_zoom_and_contrast_train_to_the_cpu_weights_on_cuda(interp):
    """augment.cu's affine path (the same draws and taps as the CPU) and its
    RandomContrast blocks (a 20x20 image: more pixels than a block's threads)."""
    r = np.random.default_rng(8)
    x = r.standard_normal((16, 5)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)

    def build():
        return bf.Sequential([layers.Input((5,)), layers.Dense(800), layers.Reshape((20, 20, 2)),
                              layers.RandomRotation(0.2, interpolation=interp, seed=1),
                              layers.RandomZoom((-0.2, 0.3), 0.2, fill_mode="constant", interpolation=interp, seed=2),
                              layers.RandomContrast(0.5, value_range=(-1.0, 1.0), seed=3),
                              layers.Conv2D(2, 3, strides=3), layers.Flatten(), layers.Dense(2)])

    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), f"augment {interp}")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_channels_first_pooling_trains_to_the_cpu_weights_on_cuda():
    """pool.cu on the (B*C, H, W, 1) geometry of channels_first samples"""
    r = np.random.default_rng(9)
    x = r.standard_normal((16, 3, 7, 6)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)

    def build():
        cf = "channels_first"
        return bf.Sequential([layers.Input((3, 7, 6)), layers.Conv2D(4, 1), layers.MaxPooling2D(2, data_format=cf),
                              layers.AveragePooling2D(2, padding="same", data_format=cf),
                              layers.GlobalMaxPooling2D(data_format=cf, keepdims=True), layers.Flatten(),
                              layers.Dense(2)])

    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "channels_first pooling")


def test_gaussian_noise_and_dropout_train_to_the_cpu_weights_on_cuda():
    """augment.cu's noise kernel draws the CPU's z per element, forward and backward"""
    r = np.random.default_rng(10)
    x = r.standard_normal((16, 6)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)

    def build():
        return bf.Sequential([layers.Input((6,)), layers.Dense(40), layers.GaussianNoise(0.3, seed=1),
                              layers.Reshape((5, 8)), layers.GaussianDropout(0.4, seed=2), layers.Flatten(),
                              layers.Dense(2)])

    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "gaussian noise")


def test_keras_random_draws_and_a_training_switch_train_to_the_cpu_weights_on_cuda():
    """augment.cu's noise kernel draws keras.random's normal / uniform / truncated normal / dropout mask as the
    CPU does (the RANDOM kind), and a call() traced in two modes (SWITCH, node modes) runs its training form"""
    r = np.random.default_rng(12)
    x = r.standard_normal((16, 6)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)

    class Noisy(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.sg = bf.random.SeedGenerator(21)

        def call(self, h, training=None):
            if training:
                b = bf.ops.shape(h)[0]
                h = h * (1.0 + bf.random.uniform((b, 1), -0.3, 0.3, seed=self.sg)) + \
                    bf.random.normal((1, 40), stddev=0.2, seed=self.sg) + \
                    bf.random.truncated_normal((b, 40), stddev=0.1, seed=5)
                h = bf.random.dropout(h, 0.25, seed=self.sg)
            return h

    def build():
        inp = layers.Input((6,))
        return bf.Model(inp, layers.Dense(2)(Noisy()(layers.Dense(40)(inp))))

    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2, micro_batch=4)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "keras.random")
    np.testing.assert_allclose(gpu.predict(x, verbose=0, device="cuda"), cpu.predict(x, verbose=0), rtol=1e-4,
                               atol=1e-5)


def test_keras_ops_math_and_dot_train_to_the_cpu_weights_on_cuda():
    """merge.cu's ewise math ops (UNARY / BINARY kinds), strided.cu's broadcast copies and sums, a custom
    weight used elementwise (WEIGHT) and layers.Dot with transposes (BMM through the Dense GEMMs)"""
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            row = bf.ops.sum(x, axis=-1, keepdims=True)
            y = bf.ops.sqrt(bf.ops.square(x) + 0.5) * self.w + bf.ops.log(bf.ops.abs(x) + 1.0) / (bf.ops.abs(row) + 1.0)
            return bf.ops.where(x > 0.2, bf.ops.exp(bf.ops.minimum(x, 1.0)), bf.ops.maximum(y, -0.5))

    r = np.random.default_rng(13)
    x = r.standard_normal((16, 5, 4)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)

    def build():
        inp = bf.Input((5, 4))
        h = Scale()(layers.Dense(4, activation="tanh")(inp))
        d = layers.Dot(axes=(1, 1), normalize=True)([h, inp])          # (4, 4): both transposed in the product
        e = layers.Dot(axes=(2, 2))([h, inp])                          # (5, 5)
        z = layers.Concatenate()([layers.Flatten()(d), layers.Flatten()(e)])
        return bf.Model(inp, layers.Dense(2)(z))
    cpu, gpu, hc, hg = _train_both(build, _sgd, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "ops math")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_one_number_per_sample_and_a_sum_over_the_batch_train_to_the_cpu_weights_on_cuda():
    """batch.c's BATCH_REDUCE (strided.cu's sum into one number and its copy to every row, forward and
    backward) with x[:, 0] and an Embedding of ids (B,), keras.io's collaborative filtering; metrics.cu's
    class_id on precision / recall / an *At* metric."""
    r = np.random.default_rng(5)
    x = np.concatenate([r.standard_normal((16, 1)), r.integers(0, 6, (16, 1))], axis=1).astype(np.float32)
    y = (r.random((16, 2)) < 0.5).astype(np.float32)

    def build():
        inp = bf.Input((2,))
        e = layers.Embedding(6, 4)(inp[:, 1])
        h = layers.Dense(4, activation="tanh")(inp)
        d = bf.ops.tensordot(e, h, 2) * 0.1 + bf.ops.sum(h) * 0.01 + bf.ops.expand_dims(inp[:, 0], -1)
        return bf.Model(inp, layers.Dense(2, activation="sigmoid")(layers.Concatenate()([d, e])))

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss="binary_crossentropy",
                    metrics=[bf.metrics.Precision(class_id=1, name="p1"),
                             bf.metrics.Recall(thresholds=0.3, class_id=0, name="r0"),
                             bf.metrics.PrecisionAtRecall(0.5, num_thresholds=9, class_id=1, name="par1")])
    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=8, epochs=2)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "batch reduce")
    assert sorted(hc.history) == ["loss", "p1", "par1", "r0"]
    for k in hc.history:
        np.testing.assert_allclose(hg.history[k], hc.history[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_mean_metrics_of_one_number_per_sample_on_cuda_as_on_the_cpu():
    """metrics.cu's batch_mean: MAE / MSE of a (B,) output are means of each batch's mean (Keras)"""
    r = np.random.default_rng(6)
    x = r.standard_normal((13, 3)).astype(np.float32)
    y = r.random(13).astype(np.float32)

    def build():
        inp = bf.Input((3,))
        return bf.Model(inp, bf.ops.squeeze(layers.Dense(1, activation="sigmoid")(inp), -1))

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.1), loss="mse", metrics=["mae", "mse"])
    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, y, batch_size=5, epochs=2)
    assert sorted(hc.history) == ["loss", "mae", "mse"]
    for k in hc.history:
        np.testing.assert_allclose(hg.history[k], hc.history[k], rtol=1e-5, err_msg=k)


def test_a_traced_custom_loss_trains_to_the_cpu_weights_on_cuda():
    """loss.cu's MEAN loss (the mean of a custom loss function's traced values, boundfit.loss_trace), with
    sample weights, under the contrastive loss's subgraph"""
    r = np.random.default_rng(17)
    x = r.standard_normal((16, 5)).astype(np.float32)
    t = (r.random((16, 1)) > 0.5).astype(np.float32)
    sw = r.uniform(0.5, 2.0, 16).astype(np.float32)

    def contrastive_loss(y_true, y_pred):
        margin_square = bf.ops.square(bf.ops.maximum(1 - y_pred, 0))
        return bf.ops.mean((1 - y_true) * bf.ops.square(y_pred) + y_true * margin_square, axis=-1)

    def build():
        inp = bf.Input((5,))
        out = layers.Dense(1)(layers.Dense(6, activation="tanh")(inp))
        y_true, values, _ = loss_trace.trace(contrastive_loss, out)
        return bf.Model([inp, y_true], values)

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss=bf.losses._TracedMean())
    cpu, gpu, hc, hg = _train_both(build, compile_kw, [x, t], np.zeros_like(t), batch_size=8, epochs=2,
                                   sample_weight=sw)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "traced custom loss")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)


def test_a_custom_loss_and_added_losses_train_to_the_cpu_weights_on_cuda():
    """compile(loss=fn) with a per-sample custom loss (loss.cu's MEAN), a Dense's l2 activity regularizer and a
    custom Regularizer (loss.cu's ADDED, unweighted), with sample weights"""
    r = np.random.default_rng(19)
    x = r.standard_normal((16, 5)).astype(np.float32)
    t = r.standard_normal((16, 2)).astype(np.float32)
    sw = r.uniform(0.5, 2.0, 16).astype(np.float32)

    class Squares(bf.regularizers.Regularizer):
        def __call__(self, v):
            return bf.ops.sum(0.05 * bf.ops.square(v))

    def my_loss(y_true, y_pred):
        return bf.ops.mean(bf.ops.abs(y_true - y_pred), axis=-1)

    def build():
        inp = bf.Input((5,))
        h = layers.Dense(6, activation="tanh", activity_regularizer=bf.regularizers.l2(0.01))(inp)
        return bf.Model(inp, layers.Dense(2, activity_regularizer=Squares())(h))

    def compile_kw():
        return dict(optimizer=bf.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss=my_loss)
    cpu, gpu, hc, hg = _train_both(build, compile_kw, x, t, batch_size=8, epochs=2, sample_weight=sw)
    _assert_weights_close(gpu.get_weights(), cpu.get_weights(), "custom and added losses")
    np.testing.assert_allclose(hg.history["loss"], hc.history["loss"], rtol=1e-4)
