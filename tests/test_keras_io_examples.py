"""Real programs: the model-building and training code of keras.io examples,
written from their public code with the data replaced by small synthetic
arrays, run unchanged with `keras` bound to Keras 3 and to boundfit. Each
program is split at '# --- train': after the build part the Keras model's
initial weights are copied into boundfit's and both must predict the same
on the program's `probe` batch; after training (shuffled, with dropout, so
not step for step) both must give the same history keys and lengths,
output shapes and files. Keras's run is recorded (helpers/keras_recorded.py:
each program's results under this file's source, so a changed program is
run by Keras again)."""

import os

import numpy as np
import pytest

import boundfit

import keras_ref
from helpers import keras_recorded

MNIST_CONVNET = '''
num_classes, input_shape = 10, (28, 28, 1)
rng = np.random.default_rng(0)
x_train = rng.random((96, 28, 28, 1), dtype=np.float32)
y_train = keras.utils.to_categorical(rng.integers(0, 10, 96), num_classes)
model = keras.Sequential([
    keras.Input(shape=input_shape),
    keras.layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
    keras.layers.MaxPooling2D(pool_size=(2, 2)),
    keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
    keras.layers.MaxPooling2D(pool_size=(2, 2)),
    keras.layers.Flatten(),
    keras.layers.Dropout(0.5),
    keras.layers.Dense(num_classes, activation="softmax"),
])
probe = x_train[:8]
# --- train
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=2, validation_split=0.1, verbose=0)
score = model.evaluate(x_train[:32], y_train[:32], verbose=0)
pred = model.predict(x_train[:8], verbose=0)
'''

IMBALANCED_CLASSIFICATION = '''
rng = np.random.default_rng(0)
train_features = rng.standard_normal((256, 30)).astype("float32")
train_targets = (rng.random((256, 1)) < 0.1).astype("uint8")
counts = np.bincount(train_targets[:, 0])
weight_for_0, weight_for_1 = 1.0 / counts[0], 1.0 / counts[1]
model = keras.Sequential([
    keras.Input(shape=train_features.shape[1:]),
    keras.layers.Dense(32, activation="relu"),
    keras.layers.Dense(32, activation="relu"),
    keras.layers.Dropout(0.3),
    keras.layers.Dense(1, activation="sigmoid"),
])
probe = train_features[:8]
# --- train
metrics = [keras.metrics.FalseNegatives(name="fn"), keras.metrics.FalsePositives(name="fp"),
           keras.metrics.TrueNegatives(name="tn"), keras.metrics.TruePositives(name="tp"),
           keras.metrics.Precision(name="precision"), keras.metrics.Recall(name="recall")]
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy", metrics=metrics)
callbacks = [keras.callbacks.ModelCheckpoint(out + "/fraud_model_at_epoch_{epoch}.keras")]
history = model.fit(train_features, train_targets, batch_size=64, epochs=2, verbose=0, callbacks=callbacks,
                    validation_data=(train_features[:64], train_targets[:64]),
                    class_weight={0: weight_for_0, 1: weight_for_1})
pred = model.predict(train_features[:8], verbose=0)
'''

TIMESERIES_CLASSIFICATION = '''
rng = np.random.default_rng(0)
x_train = rng.standard_normal((64, 50, 1)).astype("float32")
y_train = rng.integers(0, 2, 64)
num_classes = len(np.unique(y_train))

def make_model(input_shape):
    input_layer = keras.layers.Input(input_shape)
    conv1 = keras.layers.Conv1D(filters=8, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)
    conv2 = keras.layers.Conv1D(filters=8, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)
    gap = keras.layers.GlobalAveragePooling1D()(conv2)
    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)
    return keras.models.Model(inputs=input_layer, outputs=output_layer)

model = make_model(input_shape=x_train.shape[1:])
probe = x_train[:8]
# --- train
callbacks = [
    keras.callbacks.ModelCheckpoint(out + "/best_model.keras", save_best_only=True, monitor="val_loss"),
    keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=20, min_lr=0.0001),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=50, verbose=0),
]
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=3, callbacks=callbacks, validation_split=0.2, verbose=0)
model = keras.models.load_model(out + "/best_model.keras")
test_loss, test_acc = model.evaluate(x_train, y_train, verbose=0)
pred = model.predict(x_train[:8], verbose=0)
'''

BIDIRECTIONAL_LSTM_IMDB = '''
max_features, maxlen = 200, 20
rng = np.random.default_rng(0)
x_train = [list(rng.integers(1, max_features, rng.integers(3, 30))) for _ in range(64)]
y_train = rng.integers(0, 2, 64)
x_train = keras.utils.pad_sequences(x_train, maxlen=maxlen)
inputs = keras.Input(shape=(None,), dtype="int32")
x = keras.layers.Embedding(max_features, 16)(inputs)
x = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(x)
x = keras.layers.Bidirectional(keras.layers.LSTM(8))(x)
outputs = keras.layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
probe = x_train[:8]
# --- train
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=2, validation_data=(x_train[:16], y_train[:16]),
                    verbose=0)
pred = model.predict(x_train[:8, :11], verbose=0)
'''

PRETRAINED_WORD_EMBEDDINGS = '''
num_tokens, embedding_dim = 50, 8
rng = np.random.default_rng(0)
embedding_matrix = rng.standard_normal((num_tokens, embedding_dim)).astype("float32")
embedding_layer = keras.layers.Embedding(num_tokens, embedding_dim, trainable=False)
embedding_layer.build((1,))
embedding_layer.set_weights([embedding_matrix])
int_sequences_input = keras.Input(shape=(None,), dtype="int64")
embedded_sequences = embedding_layer(int_sequences_input)
x = keras.layers.Conv1D(16, 5, activation="relu")(embedded_sequences)
x = keras.layers.MaxPooling1D(5)(x)
x = keras.layers.Conv1D(16, 5, activation="relu")(x)
x = keras.layers.GlobalMaxPooling1D()(x)
x = keras.layers.Dense(16, activation="relu")(x)
x = keras.layers.Dropout(0.5)(x)
preds = keras.layers.Dense(4, activation="softmax")(x)
model = keras.Model(int_sequences_input, preds)
x_train = rng.integers(0, num_tokens, (64, 40))
y_train = rng.integers(0, 4, 64)
probe = x_train[:8]
# --- train
model.compile(loss="sparse_categorical_crossentropy", optimizer="rmsprop", metrics=["acc"])
history = model.fit(x_train, y_train, batch_size=16, epochs=2, validation_data=(x_train[:16], y_train[:16]),
                    verbose=0)
pred = model.predict(x_train[:8], verbose=0)
'''

ANTIRECTIFIER = '''
class Antirectifier(keras.layers.Layer):
    def __init__(self, initializer="he_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        output_dim = input_shape[-1]
        self.kernel = self.add_weight(shape=(output_dim * 2, output_dim), initializer=self.initializer,
                                      name="kernel", trainable=True)

    def call(self, inputs):
        inputs -= keras.ops.mean(inputs, axis=-1, keepdims=True)
        pos = keras.ops.relu(inputs)
        neg = keras.ops.relu(-inputs)
        concatenated = keras.ops.concatenate([pos, neg], axis=-1)
        mixed = keras.ops.matmul(concatenated, self.kernel)
        return mixed

    def get_config(self):
        base_config = super().get_config()
        config = {"initializer": keras.initializers.serialize(self.initializer)}
        return dict(list(base_config.items()) + list(config.items()))


rng = np.random.default_rng(0)
x_train = rng.random((96, 64), dtype=np.float32)
y_train = rng.integers(0, 10, 96)
model = keras.Sequential([
    keras.Input(shape=(64,)),
    keras.layers.Dense(32),
    Antirectifier(),
    keras.layers.Dense(32),
    Antirectifier(),
    keras.layers.Dropout(0.1),
    keras.layers.Dense(10),
])
probe = x_train[:8]
# --- train
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=keras.optimizers.RMSprop(), metrics=[keras.metrics.SparseCategoricalAccuracy()])
history = model.fit(x_train, y_train, batch_size=32, epochs=2, validation_split=0.15, verbose=0)
score = model.evaluate(x_train[:32], y_train[:32], verbose=0)
pred = model.predict(x_train[:8], verbose=0)
'''

IMAGE_CLASSIFICATION_FROM_SCRATCH = '''
# (images 24x24 instead of 180x180; block widths [8, 16, 24] and 32 instead of [256, 512, 728] and 1024)
image_size = (24, 24)
rng = np.random.default_rng(0)
x_train = rng.integers(0, 256, (48,) + image_size + (3,)).astype("float32")
y_train = rng.integers(0, 2, (48, 1)).astype("float32")
data_augmentation = keras.Sequential(
    [
        keras.layers.RandomFlip("horizontal"),
        keras.layers.RandomRotation(0.1),
    ]
)


def make_model(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = data_augmentation(inputs)

    # Entry block
    x = keras.layers.Rescaling(1.0 / 255)(x)
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    for size in [8, 16, 24]:
        x = keras.layers.Activation("relu")(x)
        x = keras.layers.SeparableConv2D(size, 3, padding="same")(x)
        x = keras.layers.BatchNormalization()(x)

        x = keras.layers.Activation("relu")(x)
        x = keras.layers.SeparableConv2D(size, 3, padding="same")(x)
        x = keras.layers.BatchNormalization()(x)

        x = keras.layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = keras.layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = keras.layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    x = keras.layers.SeparableConv2D(32, 3, padding="same")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Activation("relu")(x)

    x = keras.layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        units = 1
    else:
        units = num_classes

    x = keras.layers.Dropout(0.25)(x)
    # We specify linear activation since it's the raw logits
    outputs = keras.layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


model = make_model(input_shape=image_size + (3,), num_classes=2)
probe = x_train[:8]
# --- train
epochs = 1
callbacks = [keras.callbacks.ModelCheckpoint(out + "/save_at_{epoch}.keras")]
model.compile(
    optimizer=keras.optimizers.Adam(3e-4),
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy(name="acc")],
)
history = model.fit(x_train, y_train, batch_size=16, epochs=epochs, callbacks=callbacks,
                    validation_data=(x_train[:16], y_train[:16]), verbose=0)
img = x_train[:1]
predictions = model.predict(img, verbose=0)
score = float(keras.ops.sigmoid(predictions[0][0]))
pred = predictions
'''


TIMESERIES_TRANSFORMER = '''
# keras.io/examples/timeseries/timeseries_classification_transformer: Transformer encoder blocks of
# MultiHeadAttention, LayerNormalization and 1x1 Conv1D, GlobalAveragePooling1D(data_format="channels_first")
rng = np.random.default_rng(0)
x_train = rng.standard_normal((48, 20, 1)).astype("float32")
y_train = rng.integers(0, 2, 48)
x_test, y_test = x_train[:16], y_train[:16]
n_classes = len(np.unique(y_train))

def transformer_encoder(inputs, head_size, num_heads, ff_dim, dropout=0):
    x = layers.MultiHeadAttention(key_dim=head_size, num_heads=num_heads, dropout=dropout)(inputs, inputs)
    x = layers.Dropout(dropout)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    res = x + inputs
    x = layers.Conv1D(filters=ff_dim, kernel_size=1, activation="relu")(res)
    x = layers.Dropout(dropout)(x)
    x = layers.Conv1D(filters=inputs.shape[-1], kernel_size=1)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    return x + res

def build_model(input_shape, head_size, num_heads, ff_dim, num_transformer_blocks, mlp_units, dropout=0,
                mlp_dropout=0):
    inputs = keras.Input(shape=input_shape)
    x = inputs
    for _ in range(num_transformer_blocks):
        x = transformer_encoder(x, head_size, num_heads, ff_dim, dropout)
    x = layers.GlobalAveragePooling1D(data_format="channels_first")(x)
    for dim in mlp_units:
        x = layers.Dense(dim, activation="relu")(x)
        x = layers.Dropout(mlp_dropout)(x)
    outputs = layers.Dense(n_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)

input_shape = x_train.shape[1:]
model = build_model(input_shape, head_size=16, num_heads=2, ff_dim=4, num_transformer_blocks=1, mlp_units=[32],
                    mlp_dropout=0.4, dropout=0.25)
probe = x_train[:8]
# --- train
model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.Adam(learning_rate=1e-4),
              metrics=["sparse_categorical_accuracy"])
callbacks = [keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)]
history = model.fit(x_train, y_train, validation_split=0.2, epochs=2, batch_size=16, callbacks=callbacks, verbose=0)
model.evaluate(x_test, y_test, verbose=0)
pred = model.predict(x_test, verbose=0)
'''

SEQ2SEQ = '''
# keras.io/examples/nlp/lstm_seq2seq: character-level LSTM encoder-decoder, its inference models rebuilt from
# the loaded file's layers, and the decoding loop (one step at a time, states fed back)
rng = np.random.default_rng(0)
num_encoder_tokens, num_decoder_tokens, latent_dim = 7, 6, 16
max_encoder_seq_length, max_decoder_seq_length, num_samples = 9, 8, 40
target_token_index = {"\\t": 0, "\\n": 1, "a": 2, "b": 3, "c": 4, "d": 5}
reverse_target_char_index = dict((i, char) for char, i in target_token_index.items())
encoder_input_data = np.eye(num_encoder_tokens, dtype="float32")[rng.integers(0, num_encoder_tokens, (num_samples, max_encoder_seq_length))]
decoder_input_data = np.eye(num_decoder_tokens, dtype="float32")[rng.integers(0, num_decoder_tokens, (num_samples, max_decoder_seq_length))]
decoder_target_data = np.zeros_like(decoder_input_data)
decoder_target_data[:, :-1] = decoder_input_data[:, 1:]

encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
encoder = keras.layers.LSTM(latent_dim, return_state=True)
encoder_outputs, state_h, state_c = encoder(encoder_inputs)
encoder_states = [state_h, state_c]
decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))
decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
decoder_outputs = decoder_dense(decoder_outputs)
model = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)
probe = [encoder_input_data[:4], decoder_input_data[:4]]
# --- train
model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
history = model.fit([encoder_input_data, decoder_input_data], decoder_target_data, batch_size=8, epochs=2,
                    validation_split=0.2, verbose=0)
model.save(out + "/s2s_model.keras")

model = keras.models.load_model(out + "/s2s_model.keras")
encoder_inputs = model.input[0]  # input_1
encoder_outputs, state_h_enc, state_c_enc = model.layers[2].output  # lstm_1
encoder_states = [state_h_enc, state_c_enc]
encoder_model = keras.Model(encoder_inputs, encoder_states)

decoder_inputs = model.input[1]  # input_2
decoder_state_input_h = keras.Input(shape=(latent_dim,))
decoder_state_input_c = keras.Input(shape=(latent_dim,))
decoder_states_inputs = [decoder_state_input_h, decoder_state_input_c]
decoder_lstm = model.layers[3]
decoder_outputs, state_h_dec, state_c_dec = decoder_lstm(decoder_inputs, initial_state=decoder_states_inputs)
decoder_states = [state_h_dec, state_c_dec]
decoder_dense = model.layers[4]
decoder_outputs = decoder_dense(decoder_outputs)
decoder_model = keras.Model([decoder_inputs] + decoder_states_inputs, [decoder_outputs] + decoder_states)

def decode_sequence(input_seq):
    states_value = encoder_model.predict(input_seq, verbose=0)
    target_seq = np.zeros((1, 1, num_decoder_tokens))
    target_seq[0, 0, target_token_index["\\t"]] = 1.0
    stop_condition = False
    decoded_sentence = ""
    steps = []
    while not stop_condition:
        output_tokens, h, c = decoder_model.predict([target_seq] + states_value, verbose=0)
        steps.append(output_tokens[0, -1, :])
        sampled_token_index = np.argmax(output_tokens[0, -1, :])
        sampled_char = reverse_target_char_index[sampled_token_index]
        decoded_sentence += sampled_char
        if sampled_char == "\\n" or len(decoded_sentence) > max_decoder_seq_length:
            stop_condition = True
        target_seq = np.zeros((1, 1, num_decoder_tokens))
        target_seq[0, 0, sampled_token_index] = 1.0
        states_value = [h, c]
    return decoded_sentence, np.stack(steps)

for seq_index in range(2):
    input_seq = encoder_input_data[seq_index : seq_index + 1]
    decoded_sentence, pred = decode_sequence(input_seq)
'''

CONV_AUTOENCODER = '''
# keras.io/examples/vision/autoencoder: a convolutional denoising autoencoder (Conv2D, MaxPooling2D,
# Conv2DTranspose with strides 2), trained on noisy images to give the clean ones
rng = np.random.default_rng(0)
train_data = rng.random((32, 28, 28, 1)).astype("float32")
test_data = rng.random((8, 28, 28, 1)).astype("float32")

def noise(array):
    noise_factor = 0.4
    noisy_array = array + noise_factor * np.random.normal(loc=0.0, scale=1.0, size=array.shape)
    return np.clip(noisy_array, 0.0, 1.0)

noisy_train_data = noise(train_data)
noisy_test_data = noise(test_data)

input = layers.Input(shape=(28, 28, 1))
x = layers.Conv2D(32, (3, 3), activation="relu", padding="same")(input)
x = layers.MaxPooling2D((2, 2), padding="same")(x)
x = layers.Conv2D(32, (3, 3), activation="relu", padding="same")(x)
x = layers.MaxPooling2D((2, 2), padding="same")(x)
x = layers.Conv2DTranspose(32, (3, 3), strides=2, activation="relu", padding="same")(x)
x = layers.Conv2DTranspose(32, (3, 3), strides=2, activation="relu", padding="same")(x)
x = layers.Conv2D(1, (3, 3), activation="sigmoid", padding="same")(x)
autoencoder = keras.Model(input, x)
model = autoencoder
probe = test_data
# --- train
autoencoder.compile(optimizer="adam", loss="binary_crossentropy")
history = autoencoder.fit(x=train_data, y=train_data, epochs=2, batch_size=16, shuffle=True,
                          validation_data=(test_data, test_data), verbose=0)
history = autoencoder.fit(x=noisy_train_data, y=train_data, epochs=2, batch_size=16, shuffle=True,
                          validation_data=(noisy_test_data, test_data), verbose=0)
pred = autoencoder.predict(noisy_test_data, verbose=0)
'''

PROGRAMS = {
    "conv_denoising_autoencoder": CONV_AUTOENCODER,
    "timeseries_classification_transformer": TIMESERIES_TRANSFORMER,
    "mnist_convnet": MNIST_CONVNET,
    "imbalanced_classification": IMBALANCED_CLASSIFICATION,
    "timeseries_classification_from_scratch": TIMESERIES_CLASSIFICATION,
    "bidirectional_lstm_imdb": BIDIRECTIONAL_LSTM_IMDB,
    "pretrained_word_embeddings": PRETRAINED_WORD_EMBEDDINGS,
    "antirectifier": ANTIRECTIFIER,
}


def _keras_run(program, weights=None, extra=None):
    """Keras's side of a program, recorded: the build part run, its initial weights (weights(km): default
    get_weights), the probe and its predictions, then the training part: the history, pred, the files it wrote,
    and extra(scope)'s results"""
    def compute():
        import tempfile
        keras = keras_ref.load()
        build, train = program.split("# --- train")
        with tempfile.TemporaryDirectory() as out:
            scope = {"keras": keras, "ops": keras.ops, "layers": keras.layers, "np": np, "out": out}
            exec(build, scope)
            km, probe = scope["model"], scope["probe"]
            rec = {"w0": weights(km) if weights else km.get_weights(), "probe": probe,
                   "probe_pred": km.predict(probe, verbose=0)}
            exec(train, scope)
            rec.update(history=scope["history"].history, pred=np.asarray(scope["pred"]), files=os.listdir(out),
                       extra=extra(scope) if extra else None)
        return rec
    return keras_recorded.case(compute)


def _run_both(program, tmp_path, copy=None, weights=None, extra=None):
    """Keras's results (_keras_run) and the scope of the program run by boundfit from Keras's initial weights
    (copy(w0, bm), default set_weights), its probe predicting as Keras's"""
    k = _keras_run(program, weights, extra)
    build, train = program.split("# --- train")
    out = tmp_path / "boundfit"
    out.mkdir()
    b = {"keras": boundfit, "ops": boundfit.ops, "layers": boundfit.layers, "np": np, "out": str(out)}
    exec(build, b)
    bm = b["model"]
    if copy is None:
        bm.set_weights(k["w0"])
    else:
        copy(k["w0"], bm)
    np.testing.assert_allclose(bm.predict(k["probe"], verbose=0), k["probe_pred"], rtol=1e-5, atol=1e-6)
    exec(train, b)
    return k, b


def trained(scope):
    """Keras's weights after the training part, and its evaluate's results where the program keeps them"""
    return {"weights": scope["model"].get_weights(), "results": scope.get("results")}


RECOMMENDER_LAYERS = ("user_embedding", "user_bias", "movie_embedding", "movie_bias")


def by_layer(km):   # layer by layer: Keras orders a subclassed model's weights by attribute, boundfit by call
    return {name: getattr(km, name).get_weights() for name in RECOMMENDER_LAYERS}


def copy_by_layer(w0, bm):
    for name in RECOMMENDER_LAYERS:
        getattr(bm, name).set_weights(w0[name])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_keras_io_example_runs_unchanged(name, tmp_path):
    k, b = _run_both(PROGRAMS[name], tmp_path)
    hk = {key: v for key, v in k["history"].items() if key != "learning_rate"}
    hb = {key: v for key, v in b["history"].history.items() if key != "learning_rate"}
    assert sorted(hb) == sorted(hk)
    assert all(len(hb[key]) == len(hk[key]) for key in hk)
    assert b["pred"].shape == k["pred"].shape
    assert sorted(os.listdir(tmp_path / "boundfit")) == sorted(k["files"])
    assert all(np.isfinite(v).all() for v in hb.values()) and np.isfinite(b["pred"]).all()


def test_lstm_seq2seq_decodes_as_keras_step_by_step(tmp_path):
    """The inference models rebuilt from the loaded file's layers (model.layers[2].output, a layer called again
    on new Inputs with initial_state) decode one step at a time, the states fed back, exactly as Keras's do
    from the same weights: the same characters and next-character distributions."""
    def decoded(k):   # Keras's trained weights, and its decoding of the first three sequences
        return {"weights": k["model"].get_weights(),
                "decoded": [k["decode_sequence"](k["encoder_input_data"][i:i + 1]) for i in range(3)]}
    k, b = _run_both(SEQ2SEQ, tmp_path, extra=decoded)
    hk, hb = k["history"], b["history"].history
    assert sorted(hb) == sorted(hk) and all(len(hb[key]) == len(hk[key]) for key in hk)
    assert sorted(os.listdir(tmp_path / "boundfit")) == sorted(k["files"])
    b["model"].set_weights(k["extra"]["weights"])
    for i, (sk, pk) in enumerate(k["extra"]["decoded"]):
        sb, pb = b["decode_sequence"](b["encoder_input_data"][i:i + 1])
        assert sb == sk
        np.testing.assert_allclose(pb, pk, rtol=1e-5, atol=1e-6)


def test_image_classification_from_scratch_runs_unchanged(tmp_path):
    """The Xception-like model with its data_augmentation Sequential (RandomFlip, RandomRotation) inside:
    the same predictions as Keras from Keras's initial weights, then the training part in boundfit only
    (Keras's JAX compile of this training step alone takes a minute on the test machine); what Keras's
    history and checkpoint files would be is known."""
    build, train = IMAGE_CLASSIFICATION_FROM_SCRATCH.split("# --- train")

    def keras_built():
        scope = {"keras": keras_ref.load(), "np": np, "out": str(tmp_path)}
        exec(build, scope)
        km, probe = scope["model"], scope["probe"]
        return {"w0": km.get_weights(), "probe": probe, "out": np.asarray(km(probe, training=False))}
    k = keras_recorded.case(keras_built)
    b = {"keras": boundfit, "np": np, "out": str(tmp_path)}
    exec(build, b)
    b["model"].set_weights(k["w0"])
    np.testing.assert_allclose(b["model"].predict(k["probe"], verbose=0), k["out"], rtol=1e-4, atol=1e-5)
    exec(train, b)
    assert sorted(b["history"].history) == ["acc", "loss", "val_acc", "val_loss"]
    assert os.listdir(tmp_path) == ["save_at_1.keras"]
    assert all(np.isfinite(v).all() for v in b["history"].history.values()) and b["pred"].shape == (1, 1)
    assert 0.0 < b["score"] < 1.0


SIAMESE_CONTRASTIVE = '''
# keras.io/examples/vision/siamese_contrastive: the model, its contrastive loss written in keras.ops, the
# training with validation data and the evaluation (no shuffling, so Keras and boundfit see the same batches)
epochs, batch_size, margin = 2, 16, 1
rng = np.random.default_rng(0)
x_train_1 = rng.random((64, 28, 28, 1), dtype=np.float32)
x_train_2 = rng.random((64, 28, 28, 1), dtype=np.float32)
labels_train = rng.integers(0, 2, 64).astype(np.float32)
x_val_1, x_val_2 = x_train_1[:24] * 0.5, x_train_2[:24]
labels_val = labels_train[:24]

def euclidean_distance(vects):
    x, y = vects
    sum_square = ops.sum(ops.square(x - y), axis=1, keepdims=True)
    return ops.sqrt(ops.maximum(sum_square, keras.backend.epsilon()))

input = keras.layers.Input((28, 28, 1))
x = keras.layers.BatchNormalization()(input)
x = keras.layers.Conv2D(4, (5, 5), activation="tanh")(x)
x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
x = keras.layers.Conv2D(16, (5, 5), activation="tanh")(x)
x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
x = keras.layers.Flatten()(x)
x = keras.layers.BatchNormalization()(x)
x = keras.layers.Dense(10, activation="tanh")(x)
embedding_network = keras.Model(input, x)

input_1 = keras.layers.Input((28, 28, 1))
input_2 = keras.layers.Input((28, 28, 1))
tower_1 = embedding_network(input_1)
tower_2 = embedding_network(input_2)
merge_layer = keras.layers.Lambda(euclidean_distance, output_shape=(1,))([tower_1, tower_2])
normal_layer = keras.layers.BatchNormalization()(merge_layer)
output_layer = keras.layers.Dense(1, activation="sigmoid")(normal_layer)
siamese = keras.Model(inputs=[input_1, input_2], outputs=output_layer)
model = siamese
probe = [x_train_1[:8], x_train_2[:8]]

def loss(margin=1):
    def contrastive_loss(y_true, y_pred):
        square_pred = ops.square(y_pred)
        margin_square = ops.square(ops.maximum(margin - (y_pred), 0))
        return ops.mean((1 - y_true) * square_pred + (y_true) * margin_square)
    return contrastive_loss
# --- train
siamese.compile(loss=loss(margin=margin), optimizer="RMSprop", metrics=["accuracy"])
history = siamese.fit([x_train_1, x_train_2], labels_train, validation_data=([x_val_1, x_val_2], labels_val),
                      batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)
results = siamese.evaluate([x_val_1, x_val_2], labels_val)
pred = siamese.predict(probe, verbose=0)
'''


def test_siamese_contrastive_runs_unchanged_and_trains_as_keras(tmp_path):
    """The whole program: the Lambda's euclidean distance (ops.sum / square / maximum with epsilon / sqrt) on
    the shared tower, compile(loss=loss(margin=1)) with the example's contrastive_loss (keras.ops: square,
    maximum, a mean over every axis), fit with validation data, evaluate, predict: from Keras's initial
    weights, the same losses, accuracies and weights as Keras 3 (RMSprop, BatchNormalization in the towers)."""
    k, b = _run_both(SIAMESE_CONTRASTIVE, tmp_path, extra=trained)
    hk, hb = k["history"], b["history"].history
    assert sorted(hb) == sorted(hk) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(hb[key], hk[key], rtol=1e-4, err_msg=key)
    for key in ("accuracy", "val_accuracy"):   # a prediction at the 0.5 threshold may round either way
        np.testing.assert_allclose(hb[key], hk[key], atol=1.5 / 64, err_msg=key)
    np.testing.assert_allclose(b["results"], k["extra"]["results"], rtol=1e-4, atol=1.5 / 24)
    for wb, wk in zip(b["model"].get_weights(), k["extra"]["weights"], strict=True):
        np.testing.assert_allclose(wb, wk, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(b["pred"], k["pred"], rtol=1e-4, atol=1e-5)


POINTNET_REGULARIZED = '''
# keras.io/examples/vision/pointnet: the T-nets with their OrthogonalRegularizer (an activity regularizer written
# in keras.ops) on the Dense that makes the transform, Conv1D / BatchNormalization blocks, the Dot with the
# points; small sizes, no shuffling and no dropout so that Keras and boundfit see the same steps
NUM_POINTS, NUM_CLASSES, DROP = 16, 4, 0.0
rng = np.random.default_rng(0)
train_points = rng.standard_normal((48, NUM_POINTS, 3)).astype(np.float32)
train_labels = rng.integers(0, NUM_CLASSES, 48)

class OrthogonalRegularizer(keras.regularizers.Regularizer):
    def __init__(self, num_features, l2reg=0.001):
        self.num_features = num_features
        self.l2reg = l2reg
        self.eye = ops.eye(num_features)

    def __call__(self, x):
        x = ops.reshape(x, (-1, self.num_features, self.num_features))
XXT
        return ops.sum(self.l2reg * ops.square(xxt - self.eye))

def conv_bn(x, filters):
    x = layers.Conv1D(filters, kernel_size=1, padding="valid")(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)

def dense_bn(x, filters):
    x = layers.Dense(filters)(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)

def tnet(inputs, num_features):
    bias = keras.initializers.Constant(np.eye(num_features).flatten())
    reg = OrthogonalRegularizer(num_features)
    x = conv_bn(inputs, 8)
    x = conv_bn(x, 16)
    x = layers.GlobalMaxPooling1D()(x)
    x = dense_bn(x, 16)
    x = layers.Dense(num_features * num_features, kernel_initializer="zeros", bias_initializer=bias,
                     activity_regularizer=reg, name=f"transform_{num_features}")(x)
    feat_T = layers.Reshape((num_features, num_features))(x)
    return layers.Dot(axes=(2, 1))([inputs, feat_T])

inputs = keras.Input(shape=(NUM_POINTS, 3))
x = tnet(inputs, 3)
x = conv_bn(x, 8)
x = tnet(x, 8)
x = conv_bn(x, 16)
x = layers.GlobalMaxPooling1D()(x)
x = dense_bn(x, 16)
x = layers.Dropout(DROP)(x)
outputs = layers.Dense(NUM_CLASSES, activation="softmax")(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="pointnet")
probe = train_points[:8]
# --- train
model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.Adam(learning_rate=0.001),
              metrics=["sparse_categorical_accuracy"])
history = model.fit(train_points, train_labels, batch_size=16, epochs=2, shuffle=False,
                    validation_data=(train_points[:16], train_labels[:16]), verbose=0)
pred = model.predict(probe, verbose=0)
'''
# the example's xxt: tensordot over the feature axes of the (B, n, n) batch with itself, then back to (-1, n, n)
# blocks: every pair of samples of the batch (and their positions in it) enters the sum
POINTNET_AS_WRITTEN = """        xxt = ops.tensordot(x, x, axes=(2, 2))
        xxt = ops.reshape(xxt, (-1, self.num_features, self.num_features))"""
POINTNET_PER_SAMPLE = """        xxt = ops.matmul(x, ops.transpose(x, (0, 2, 1)))"""


def test_pointnet_with_its_orthogonal_regularizer_per_sample_trains_as_keras(tmp_path):
    """PointNet with the OrthogonalRegularizer's x x^T taken per sample (ops.matmul with the transpose): the
    activity regularizers (keras.ops reshape / matmul / transpose / eye / square / sum, divided by the batch
    size as Keras 3 does) train from Keras's weights to Keras's losses, accuracies and weights."""
    k, b = _run_both(POINTNET_REGULARIZED.replace("XXT", POINTNET_PER_SAMPLE), tmp_path, extra=trained)
    hk, hb = k["history"], b["history"].history
    assert sorted(hb) == sorted(hk)
    for key in hk:
        np.testing.assert_allclose(hb[key], hk[key], rtol=1e-4, atol=1e-6, err_msg=key)
    # weights to 1e-3: the T-nets' transform Dense starts at a zero kernel, so the layers before it (and each
    # bias before a BatchNormalization) get gradients of rounding only at first, which Adam scales to its steps
    for wb, wk in zip(b["model"].get_weights(), k["extra"]["weights"], strict=True):
        np.testing.assert_allclose(wb, wk, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(b["pred"], k["pred"], rtol=1e-3, atol=1e-3)


def test_pointnet_as_written_is_refused_naming_the_regularizer_its_layer_and_tensordot():
    """The example's own regularizer contracts the batch with itself (ops.tensordot(x, x, axes=(2, 2)) of a
    (B, n, n) tensor is (B, n, B, n)): a penalty that mixes every pair of samples, which boundfit's per-sample
    graphs do not compute (nor could micro-batches): fit raises naming it, its layer and the op."""
    build, train = POINTNET_REGULARIZED.replace("XXT", POINTNET_AS_WRITTEN).split("# --- train")
    scope = {"keras": boundfit, "ops": boundfit.ops, "layers": boundfit.layers, "np": np}
    exec(build, scope)
    with pytest.raises(boundfit.ops.OpNotSupportedError,
                       match="activity_regularizer OrthogonalRegularizer of layer 'transform_3' \\(Dense\\): "
                             "keras.ops.tensordot.*keeps both batch axes"):
        exec(train, scope)


RECOMMENDER = '''
# keras.io/examples/structured_data/collaborative_filtering_movielens, its RecommenderNet with the user-movie
# product per sample through layers.Dot (the example as written, ops.tensordot(u, m, 2) over the batch: below)
num_users, num_movies, EMBEDDING_SIZE = 20, 30, 8
rng = np.random.default_rng(0)
x_train = np.stack([rng.integers(0, num_users, 96), rng.integers(0, num_movies, 96)], axis=1)
y_train = rng.random(96).astype(np.float32)

class RecommenderNet(keras.Model):
    def __init__(self, num_users, num_movies, embedding_size, **kwargs):
        super().__init__(**kwargs)
        self.num_users = num_users
        self.num_movies = num_movies
        self.embedding_size = embedding_size
        self.user_embedding = layers.Embedding(num_users, embedding_size, embeddings_initializer="he_normal",
                                               embeddings_regularizer=keras.regularizers.l2(1e-6))
        self.user_bias = layers.Embedding(num_users, 1)
        self.movie_embedding = layers.Embedding(num_movies, embedding_size, embeddings_initializer="he_normal",
                                                embeddings_regularizer=keras.regularizers.l2(1e-6))
        self.movie_bias = layers.Embedding(num_movies, 1)
        self.dot = layers.Dot(axes=2)

    def call(self, inputs):
        user_vector = self.user_embedding(inputs[:, 0:1])
        user_bias = self.user_bias(inputs[:, 0:1])
        movie_vector = self.movie_embedding(inputs[:, 1:2])
        movie_bias = self.movie_bias(inputs[:, 1:2])
        dot_user_movie = self.dot([user_vector, movie_vector])
        x = dot_user_movie + user_bias + movie_bias
        return ops.nn.sigmoid(ops.reshape(x, (-1, 1)))

model = RecommenderNet(num_users, num_movies, EMBEDDING_SIZE)
model(keras.Input(shape=(2,), dtype="int32"))
probe = x_train[:8]
# --- train
model.compile(loss=keras.losses.BinaryCrossentropy(), optimizer=keras.optimizers.Adam(learning_rate=0.001))
history = model.fit(x=x_train, y=y_train, batch_size=32, epochs=2, verbose=0, validation_split=0.25)
pred = model.predict(x_train[:8], verbose=0)
'''


def test_recommender_net_with_a_per_sample_dot_runs_as_keras(tmp_path):
    k, b = _run_both(RECOMMENDER, tmp_path, copy_by_layer, by_layer)
    assert sorted(b["history"].history) == sorted(k["history"])
    np.testing.assert_allclose(b["history"].history["loss"], k["history"]["loss"], rtol=1e-2)  # shuffled
    assert b["pred"].shape == k["pred"].shape


RECOMMENDER_TENSORDOT = '''
# keras.io/examples/structured_data/collaborative_filtering_movielens as written: inputs[:, 0] (one id per
# sample), four Embeddings, ops.tensordot(user_vector, movie_vector, 2) (one number for the whole batch)
num_users, num_movies, EMBEDDING_SIZE = 20, 30, 8
rng = np.random.default_rng(0)
x = np.stack([rng.integers(0, num_users, 160), rng.integers(0, num_movies, 160)], axis=1)
y = rng.random(160).astype(np.float32)
train_indices = int(0.8 * x.shape[0])
x_train, x_val, y_train, y_val = (x[:train_indices], x[train_indices:], y[:train_indices], y[train_indices:])

class RecommenderNet(keras.Model):
    def __init__(self, num_users, num_movies, embedding_size, **kwargs):
        super().__init__(**kwargs)
        self.num_users = num_users
        self.num_movies = num_movies
        self.embedding_size = embedding_size
        self.user_embedding = layers.Embedding(
            num_users,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.user_bias = layers.Embedding(num_users, 1)
        self.movie_embedding = layers.Embedding(
            num_movies,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.movie_bias = layers.Embedding(num_movies, 1)

    def call(self, inputs):
        user_vector = self.user_embedding(inputs[:, 0])
        user_bias = self.user_bias(inputs[:, 0])
        movie_vector = self.movie_embedding(inputs[:, 1])
        movie_bias = self.movie_bias(inputs[:, 1])
        dot_user_movie = ops.tensordot(user_vector, movie_vector, 2)
        # Add all the components (including bias)
        x = dot_user_movie + user_bias + movie_bias
        # The sigmoid activation forces the rating to between 0 and 1
        return ops.nn.sigmoid(x)


model = RecommenderNet(num_users, num_movies, EMBEDDING_SIZE)
model.compile(
    loss=keras.losses.BinaryCrossentropy(),
    optimizer=keras.optimizers.Adam(learning_rate=0.001),
)
model(keras.Input(shape=(2,), dtype="int32"))
probe = x_train[:8]
# --- train
history = model.fit(
    x=x_train,
    y=y_train,
    batch_size=32,
    epochs=2,
    verbose=0,
    shuffle=SHUFFLE,
    validation_data=(x_val, y_val),
)
pred = model.predict(x_val[:8], verbose=0)
'''


def test_recommender_net_as_written_with_tensordot_over_the_batch_matches_keras(tmp_path):
    """keras.io's RecommenderNet unchanged: inputs[:, 0] (one id per sample) into four Embeddings (two with an
    l2 regularizer), ops.tensordot(user_vector, movie_vector, 2), which contracts the batch axis too (one
    number for the whole batch, added to every sample's biases), and ops.nn.sigmoid. From Keras's initial
    weights, the same batches (shuffle=False) give Keras 3's losses, validation losses and predictions; with
    the example's shuffling it runs and gives the same history keys."""
    k, b = _run_both(RECOMMENDER_TENSORDOT.replace("SHUFFLE", "False"), tmp_path, copy_by_layer, by_layer)
    hk, hb = k["history"], b["history"].history
    assert sorted(hb) == sorted(hk) == ["loss", "val_loss"]
    np.testing.assert_allclose(hb["loss"], hk["loss"], rtol=1e-5)
    np.testing.assert_allclose(hb["val_loss"], hk["val_loss"], rtol=1e-5)
    np.testing.assert_allclose(b["pred"], k["pred"], rtol=1e-4, atol=1e-6)
    scope = {"keras": boundfit, "ops": boundfit.ops, "layers": boundfit.layers, "np": np}
    exec(RECOMMENDER_TENSORDOT.replace("SHUFFLE", "True"), scope)
    assert sorted(scope["history"].history) == ["loss", "val_loss"] and scope["pred"].shape == (8, 1)
    with pytest.raises(ValueError, match="mixes the samples of a batch.*micro_batch=None"):
        scope["model"].fit(scope["x_train"], scope["y_train"], batch_size=32, micro_batch=8, verbose=0)
