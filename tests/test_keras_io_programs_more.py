"""Ten more keras.io programs (issue 33), across vision, text generation, structured data, time series,
audio and a training recipe, written from their Keras 3 code with the data replaced by small synthetic arrays
and run with `keras` bound to Keras 3 and to boundfit, as tests/test_keras_io_programs.py runs its ten (its
helpers: split at
'# --- train', Keras's initial weights copied in, the same predictions on the program's probe; after training
the same history keys and lengths, output shapes and files; where the steps are deterministic the same losses
and weights). Keras's runs are recorded (helpers/keras_recorded.py, under this file's source). Sizes are cut
down, each cut said in the program's first comment, plotting and printing left out, and the names the
comparison reads (model, probe, history, pred) set where the program keeps them otherwise. Three stop at a
variable-length axis that a layer's call() needs to know (boundfit traces a graph once for all lengths, Keras
per shape): refused by name, tested here."""

import numpy as np
import pytest

import boundfit
from boundfit.errors import OpNotSupportedError

from test_keras_io_programs import _flat, _run_both, _same_run_shape, _scope

CCT = '''
# keras.io/examples/vision/cct: the Compact Convolutional Transformer: CCTTokenizer (a Sequential of Conv2D,
# ZeroPadding2D and MaxPooling2D inside a custom layer, its output reshaped by ops.shape), PositionEmbedding
# (add_weight in build, ops.slice and ops.broadcast_to by ops.shape), StochasticDepth (keras.random.uniform of
# shape (batch, 1, 1) from a SeedGenerator, ops.floor), SequencePooling (a Dense inside a custom layer,
# ops.softmax over the tokens, ops.transpose, ops.matmul, ops.squeeze), its data_augmentation Sequential,
# CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), TopKCategoricalAccuracy, AdamW, the best
# weights reloaded; 48 random 16x16 images instead of CIFAR-10, channels 16/32 and projection_dim 32
positional_emb = True
conv_layers = 2
projection_dim = 32
num_heads = 2
transformer_units = [projection_dim, projection_dim]
transformer_layers = 2
stochastic_depth_rate = 0.1
learning_rate, weight_decay, batch_size, num_epochs = 0.001, 0.0001, 16, 2
image_size, num_classes = 16, 10
input_shape = (16, 16, 3)
rng = np.random.default_rng(0)
x_train = rng.integers(0, 256, (48, 16, 16, 3)).astype("float32")
y_train = keras.utils.to_categorical(rng.integers(0, num_classes, (48, 1)), num_classes)
x_test, y_test = x_train[:16], y_train[:16]

class CCTTokenizer(layers.Layer):
    def __init__(self, kernel_size=3, stride=1, padding=1, pooling_kernel_size=3, pooling_stride=2,
                 num_conv_layers=conv_layers, num_output_channels=[16, 32], positional_emb=positional_emb, **kwargs):
        super().__init__(**kwargs)
        self.conv_model = keras.Sequential()
        for i in range(num_conv_layers):
            self.conv_model.add(layers.Conv2D(num_output_channels[i], kernel_size, stride, padding="valid",
                                              use_bias=False, activation="relu", kernel_initializer="he_normal"))
            self.conv_model.add(layers.ZeroPadding2D(padding))
            self.conv_model.add(layers.MaxPooling2D(pooling_kernel_size, pooling_stride, "same"))
        self.positional_emb = positional_emb

    def call(self, images):
        outputs = self.conv_model(images)
        reshaped = keras.ops.reshape(
            outputs, (-1, keras.ops.shape(outputs)[1] * keras.ops.shape(outputs)[2], keras.ops.shape(outputs)[-1]))
        return reshaped

class PositionEmbedding(keras.layers.Layer):
    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if sequence_length is None:
            raise ValueError("`sequence_length` must be an Integer, received `None`.")
        self.sequence_length = int(sequence_length)
        self.initializer = keras.initializers.get(initializer)

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length,
                       "initializer": keras.initializers.serialize(self.initializer)})
        return config

    def build(self, input_shape):
        feature_size = input_shape[-1]
        self.position_embeddings = self.add_weight(name="embeddings", shape=[self.sequence_length, feature_size],
                                                   initializer=self.initializer, trainable=True)
        super().build(input_shape)

    def call(self, inputs, start_index=0):
        shape = keras.ops.shape(inputs)
        feature_length = shape[-1]
        sequence_length = shape[-2]
        position_embeddings = keras.ops.convert_to_tensor(self.position_embeddings)
        position_embeddings = keras.ops.slice(position_embeddings, (start_index, 0), (sequence_length, feature_length))
        return keras.ops.broadcast_to(position_embeddings, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

class SequencePooling(layers.Layer):
    def __init__(self):
        super().__init__()
        self.attention = layers.Dense(1)

    def call(self, x):
        attention_weights = keras.ops.softmax(self.attention(x), axis=1)
        attention_weights = keras.ops.transpose(attention_weights, axes=(0, 2, 1))
        weighted_representation = keras.ops.matmul(attention_weights, x)
        return keras.ops.squeeze(weighted_representation, -2)

class StochasticDepth(layers.Layer):
    def __init__(self, drop_prop, **kwargs):
        super().__init__(**kwargs)
        self.drop_prob = drop_prop
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, x, training=None):
        if training:
            keep_prob = 1 - self.drop_prob
            shape = (keras.ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
            random_tensor = keep_prob + keras.random.uniform(shape, 0, 1, seed=self.seed_generator)
            random_tensor = keras.ops.floor(random_tensor)
            return (x / keep_prob) * random_tensor
        return x

def mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = layers.Dense(units, activation=keras.ops.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x

data_augmentation = keras.Sequential(
    [layers.Rescaling(scale=1.0 / 255), layers.RandomCrop(image_size, image_size), layers.RandomFlip("horizontal")],
    name="data_augmentation")

def create_cct_model(image_size=image_size, input_shape=input_shape, num_heads=num_heads,
                     projection_dim=projection_dim, transformer_units=transformer_units):
    inputs = layers.Input(input_shape)
    augmented = data_augmentation(inputs)
    cct_tokenizer = CCTTokenizer()
    encoded_patches = cct_tokenizer(augmented)
    if positional_emb:
        sequence_length = encoded_patches.shape[1]
        encoded_patches += PositionEmbedding(sequence_length=sequence_length)(encoded_patches)
    dpr = [x for x in np.linspace(0, stochastic_depth_rate, transformer_layers)]
    for i in range(transformer_layers):
        x1 = layers.LayerNormalization(epsilon=1e-5)(encoded_patches)
        attention_output = layers.MultiHeadAttention(num_heads=num_heads, key_dim=projection_dim, dropout=0.1)(x1, x1)
        attention_output = StochasticDepth(dpr[i])(attention_output)
        x2 = layers.Add()([attention_output, encoded_patches])
        x3 = layers.LayerNormalization(epsilon=1e-5)(x2)
        x3 = mlp(x3, hidden_units=transformer_units, dropout_rate=0.1)
        x3 = StochasticDepth(dpr[i])(x3)
        encoded_patches = layers.Add()([x3, x2])
    representation = layers.LayerNormalization(epsilon=1e-5)(encoded_patches)
    weighted_representation = SequencePooling()(representation)
    logits = layers.Dense(num_classes)(weighted_representation)
    model = keras.Model(inputs=inputs, outputs=logits)
    return model

model = create_cct_model()
probe = x_train[:8]
# --- train
def run_experiment(model):
    optimizer = keras.optimizers.AdamW(learning_rate=0.001, weight_decay=0.0001)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
                  metrics=[keras.metrics.CategoricalAccuracy(name="accuracy"),
                           keras.metrics.TopKCategoricalAccuracy(5, name="top-5-accuracy")])
    checkpoint_filepath = out + "/checkpoint.weights.h5"
    checkpoint_callback = keras.callbacks.ModelCheckpoint(checkpoint_filepath, monitor="val_accuracy",
                                                          save_best_only=True, save_weights_only=True)
    history = model.fit(x=x_train, y=y_train, batch_size=batch_size, epochs=num_epochs, validation_split=0.1,
                        callbacks=[checkpoint_callback], verbose=0)
    model.load_weights(checkpoint_filepath)
    _, accuracy, top_5_accuracy = model.evaluate(x_test, y_test, verbose=0)
    return history

history = run_experiment(model)
pred = model.predict(x_test, verbose=0)
'''

CHAR_LSTM = '''
# keras.io/examples/generative/lstm_character_level_text_generation: sentences of maxlen characters one-hot
# encoded into bool arrays, a Sequential LSTM with a softmax Dense, RMSprop(0.01), categorical crossentropy,
# one-epoch fits in a loop each followed by sampling text at several temperatures (np.random.multinomial of the
# predicted distribution); 500 characters of a synthetic text instead of Nietzsche, maxlen 10, 16 units, 2
# epochs, 20 generated characters at 2 diversities; history = the loop's last fit
rs = np.random.RandomState(0)
text = " ".join("".join(rs.choice(list("abcdefgh"), rs.randint(2, 7))) for _ in range(110))[:500]
chars = sorted(list(set(text)))
char_indices = dict((c, i) for i, c in enumerate(chars))
indices_char = dict((i, c) for i, c in enumerate(chars))
maxlen = 10
step = 4
sentences = []
next_chars = []
for i in range(0, len(text) - maxlen, step):
    sentences.append(text[i : i + maxlen])
    next_chars.append(text[i + maxlen])
x = np.zeros((len(sentences), maxlen, len(chars)), dtype="bool")
y = np.zeros((len(sentences), len(chars)), dtype="bool")
for i, sentence in enumerate(sentences):
    for t, char in enumerate(sentence):
        x[i, t, char_indices[char]] = 1
    y[i, char_indices[next_chars[i]]] = 1

model = keras.Sequential([keras.Input(shape=(maxlen, len(chars))), layers.LSTM(16),
                          layers.Dense(len(chars), activation="softmax")])
probe = x[:8]
# --- train
optimizer = keras.optimizers.RMSprop(learning_rate=0.01)
model.compile(loss="categorical_crossentropy", optimizer=optimizer)

def sample(preds, temperature=1.0):
    preds = np.asarray(preds).astype("float64")
    preds = np.log(preds) / temperature
    exp_preds = np.exp(preds)
    preds = exp_preds / np.sum(exp_preds)
    probas = np.random.multinomial(1, preds, 1)
    return np.argmax(probas)

epochs = 2
batch_size = 128
np.random.seed(0)
texts = []
for epoch in range(epochs):
    history = model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0)
    start_index = rs.randint(0, len(text) - maxlen - 1)
    for diversity in [0.2, 1.0]:
        generated = ""
        sentence = text[start_index : start_index + maxlen]
        for i in range(20):
            x_pred = np.zeros((1, maxlen, len(chars)))
            for t, char in enumerate(sentence):
                x_pred[0, t, char_indices[char]] = 1.0
            preds = model.predict(x_pred, verbose=0)[0]
            next_index = sample(preds, diversity)
            next_char = indices_char[next_index]
            sentence = sentence[1:] + next_char
            generated += next_char
        texts.append(generated)
pred = model.predict(x, verbose=0)
'''

TABTRANSFORMER = '''
# keras.io/examples/structured_data/tabtransformer: thirteen named scalar Inputs (shape=(), float32), the
# categorical ones through Embedding, numerical ones by ops.expand_dims; the baseline MLP (LayerNormalization /
# gelu feedforward blocks inside Sequentials, then BatchNormalization / selu) and the TabTransformer (ops.stack
# of the embeddings on axis 1, MultiHeadAttention blocks with a Sequential feedforward built by
# functools.partial(LayerNormalization, epsilon=1e-6), Flatten, LayerNormalization of the numerical features),
# AdamW, BinaryCrossentropy with per-sample weights (fnlwgt); 64 random rows of the census schema, already
# looked up (the program's encode_categorical map) instead of the CSV files through tf.data, 2 epochs
from functools import partial
NUMERIC_FEATURE_NAMES = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    "workclass": list("abcdefgh"), "education": list("abcdefghijklmnop"), "marital_status": list("abcdefg"),
    "occupation": list("abcdefghijklmn"), "relationship": list("abcdef"), "race": list("abcde"),
    "gender": list("ab"), "native_country": list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"),
}
CATEGORICAL_FEATURE_NAMES = list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())
FEATURE_NAMES = NUMERIC_FEATURE_NAMES + CATEGORICAL_FEATURE_NAMES
LEARNING_RATE, WEIGHT_DECAY, DROPOUT_RATE, BATCH_SIZE, NUM_EPOCHS = 0.001, 0.0001, 0.2, 32, 2
NUM_TRANSFORMER_BLOCKS, NUM_HEADS, EMBEDDING_DIMS = 2, 2, 8
MLP_HIDDEN_UNITS_FACTORS, NUM_MLP_BLOCKS = [2, 1], 2
rng = np.random.default_rng(0)
x_train = {n: rng.standard_normal(64).astype("float32") for n in NUMERIC_FEATURE_NAMES}
x_train.update({n: rng.integers(0, len(v), 64).astype("float32")
                for n, v in CATEGORICAL_FEATURES_WITH_VOCABULARY.items()})
y_train = rng.integers(0, 2, 64).astype("float32")
w_train = rng.uniform(0.5, 2.0, 64).astype("float32")
x_test = {n: v[:16] for n, v in x_train.items()}
y_test, w_test = y_train[:16], w_train[:16]

def run_experiment(model, num_epochs, learning_rate, weight_decay, batch_size):
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay)
    model.compile(optimizer=optimizer, loss=keras.losses.BinaryCrossentropy(),
                  metrics=[keras.metrics.BinaryAccuracy(name="accuracy")])
    history = model.fit(x_train, y_train, sample_weight=w_train, batch_size=batch_size, epochs=num_epochs,
                        validation_data=(x_test, y_test, w_test), verbose=0)
    _, accuracy = model.evaluate(x_test, y_test, sample_weight=w_test, verbose=0)
    return history

def create_model_inputs():
    inputs = {}
    for feature_name in FEATURE_NAMES:
        if feature_name in NUMERIC_FEATURE_NAMES:
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="float32")
        else:
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="float32")
    return inputs

def encode_inputs(inputs, embedding_dims):
    encoded_categorical_feature_list = []
    numerical_feature_list = []
    for feature_name in inputs:
        if feature_name in CATEGORICAL_FEATURE_NAMES:
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
            embedding = layers.Embedding(input_dim=len(vocabulary), output_dim=embedding_dims)
            encoded_categorical_feature = embedding(inputs[feature_name])
            encoded_categorical_feature_list.append(encoded_categorical_feature)
        else:
            numerical_feature = ops.expand_dims(inputs[feature_name], -1)
            numerical_feature_list.append(numerical_feature)
    return encoded_categorical_feature_list, numerical_feature_list

def create_mlp(hidden_units, dropout_rate, activation, normalization_layer, name=None):
    mlp_layers = []
    for units in hidden_units:
        mlp_layers.append(normalization_layer()),
        mlp_layers.append(layers.Dense(units, activation=activation))
        mlp_layers.append(layers.Dropout(dropout_rate))
    return keras.Sequential(mlp_layers, name=name)

def create_baseline_model(embedding_dims, num_mlp_blocks, mlp_hidden_units_factors, dropout_rate):
    inputs = create_model_inputs()
    encoded_categorical_feature_list, numerical_feature_list = encode_inputs(inputs, embedding_dims)
    features = layers.concatenate(encoded_categorical_feature_list + numerical_feature_list)
    feedforward_units = [features.shape[-1]]
    for layer_idx in range(num_mlp_blocks):
        features = create_mlp(hidden_units=feedforward_units, dropout_rate=dropout_rate,
                              activation=keras.activations.gelu, normalization_layer=layers.LayerNormalization,
                              name=f"feedforward_{layer_idx}")(features)
    mlp_hidden_units = [factor * features.shape[-1] for factor in mlp_hidden_units_factors]
    features = create_mlp(hidden_units=mlp_hidden_units, dropout_rate=dropout_rate,
                          activation=keras.activations.selu, normalization_layer=layers.BatchNormalization,
                          name="MLP")(features)
    outputs = layers.Dense(units=1, activation="sigmoid", name="sigmoid")(features)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model

def create_tabtransformer_classifier(num_transformer_blocks, num_heads, embedding_dims, mlp_hidden_units_factors,
                                     dropout_rate, use_column_embedding=False):
    inputs = create_model_inputs()
    encoded_categorical_feature_list, numerical_feature_list = encode_inputs(inputs, embedding_dims)
    encoded_categorical_features = ops.stack(encoded_categorical_feature_list, axis=1)
    numerical_features = layers.concatenate(numerical_feature_list)
    if use_column_embedding:
        num_columns = encoded_categorical_features.shape[1]
        column_embedding = layers.Embedding(input_dim=num_columns, output_dim=embedding_dims)
        column_indices = ops.arange(start=0, stop=num_columns, step=1)
        encoded_categorical_features = encoded_categorical_features + column_embedding(column_indices)
    for block_idx in range(num_transformer_blocks):
        attention_output = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embedding_dims,
                                                     dropout=dropout_rate, name=f"multihead_attention_{block_idx}")(
            encoded_categorical_features, encoded_categorical_features)
        x = layers.Add(name=f"skip_connection1_{block_idx}")([attention_output, encoded_categorical_features])
        x = layers.LayerNormalization(name=f"layer_norm1_{block_idx}", epsilon=1e-6)(x)
        feedforward_output = create_mlp(hidden_units=[embedding_dims], dropout_rate=dropout_rate,
                                        activation=keras.activations.gelu,
                                        normalization_layer=partial(layers.LayerNormalization, epsilon=1e-6),
                                        name=f"feedforward_{block_idx}")(x)
        x = layers.Add(name=f"skip_connection2_{block_idx}")([feedforward_output, x])
        encoded_categorical_features = layers.LayerNormalization(name=f"layer_norm2_{block_idx}", epsilon=1e-6)(x)
    categorical_features = layers.Flatten()(encoded_categorical_features)
    numerical_features = layers.LayerNormalization(epsilon=1e-6)(numerical_features)
    features = layers.concatenate([categorical_features, numerical_features])
    mlp_hidden_units = [factor * features.shape[-1] for factor in mlp_hidden_units_factors]
    features = create_mlp(hidden_units=mlp_hidden_units, dropout_rate=dropout_rate,
                          activation=keras.activations.selu, normalization_layer=layers.BatchNormalization,
                          name="MLP")(features)
    outputs = layers.Dense(units=1, activation="sigmoid", name="sigmoid")(features)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model

baseline_model = create_baseline_model(embedding_dims=EMBEDDING_DIMS, num_mlp_blocks=NUM_MLP_BLOCKS,
                                       mlp_hidden_units_factors=MLP_HIDDEN_UNITS_FACTORS, dropout_rate=DROPOUT_RATE)
tabtransformer_model = create_tabtransformer_classifier(
    num_transformer_blocks=NUM_TRANSFORMER_BLOCKS, num_heads=NUM_HEADS, embedding_dims=EMBEDDING_DIMS,
    mlp_hidden_units_factors=MLP_HIDDEN_UNITS_FACTORS, dropout_rate=DROPOUT_RATE)
model = tabtransformer_model
probe = {n: v[:8] for n, v in x_train.items()}
# --- train
baseline_history = run_experiment(model=baseline_model, num_epochs=NUM_EPOCHS, learning_rate=LEARNING_RATE,
                                  weight_decay=WEIGHT_DECAY, batch_size=BATCH_SIZE)
history = run_experiment(model=tabtransformer_model, num_epochs=NUM_EPOCHS, learning_rate=LEARNING_RATE,
                         weight_decay=WEIGHT_DECAY, batch_size=BATCH_SIZE)
pred = tabtransformer_model.predict(x_test, verbose=0)
'''

EEG = '''
# keras.io/examples/timeseries/eeg_signal_classification: a strided Conv1D / BatchNormalization stack, Dropout,
# Flatten, Dense layers with kernel_regularizer=keras.regularizers.L2(), Adam(amsgrad=True), CategoricalCrossentropy
# with TopKCategoricalAccuracy(k=3), AUC, Precision, Recall, class_weight from the class counts, ModelCheckpoint
# ("best_model.h5", Keras's legacy HDF5) and ReduceLROnPlateau, predict on a list of one array; 64 random
# min-max scaled series of 128 steps instead of 512 (5 classes), widths 8..64 and Dense 64/32/16/8 instead of
# 32..1024 and 4096..128, 2 epochs
rng = np.random.default_rng(0)
num_classes = 5
labels = rng.integers(0, num_classes, 80)
series = rng.random((80, 128, 1)).astype("float32")
x_train, x_test = series[:64], series[64:]
y_train = keras.utils.to_categorical(labels[:64].astype(np.float32).reshape(-1, 1))
y_test = keras.utils.to_categorical(labels[64:].astype(np.float32).reshape(-1, 1), num_classes)
vals_dict = {}
for i in labels:
    if i in vals_dict.keys():
        vals_dict[i] += 1
    else:
        vals_dict[i] = 1
total = sum(vals_dict.values())
weight_dict = {k: (1 - (v / total)) for k, v in vals_dict.items()}

def create_model():
    input_layer = keras.Input(shape=(128, 1))
    x = layers.Conv1D(filters=8, kernel_size=3, strides=2, activation="relu", padding="same")(input_layer)
    x = layers.BatchNormalization()(x)
    x = layers.Conv1D(filters=16, kernel_size=3, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Conv1D(filters=32, kernel_size=5, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Conv1D(filters=64, kernel_size=7, strides=2, activation="relu", padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(64, activation="relu")(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Dense(32, activation="relu", kernel_regularizer=keras.regularizers.L2())(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Dense(16, activation="relu", kernel_regularizer=keras.regularizers.L2())(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Dense(8, activation="relu", kernel_regularizer=keras.regularizers.L2())(x)
    output_layer = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs=input_layer, outputs=output_layer)

conv_model = create_model()
model = conv_model
probe = x_train[:8]
# --- train
epochs = 2
callbacks = [
    keras.callbacks.ModelCheckpoint(out + "/best_model.h5", save_best_only=True, monitor="loss"),
    keras.callbacks.ReduceLROnPlateau(monitor="val_top_k_categorical_accuracy", factor=0.2, patience=2,
                                      min_lr=0.000001),
]
optimizer = keras.optimizers.Adam(amsgrad=True, learning_rate=0.001)
loss = keras.losses.CategoricalCrossentropy()
conv_model.compile(optimizer=optimizer, loss=loss,
                   metrics=[keras.metrics.TopKCategoricalAccuracy(k=3), keras.metrics.AUC(), keras.metrics.Precision(),
                            keras.metrics.Recall()])
conv_model_history = conv_model.fit(x_train, y_train, batch_size=16, epochs=epochs, callbacks=callbacks,
                                    validation_data=(x_test, y_test), class_weight=weight_dict, verbose=0)
loss, accuracy, auc, precision, recall = conv_model.evaluate(x_test, y_test, verbose=0)
data_array = [np.asarray(series[:12]).astype(np.float32).reshape(-1, 128, 1)]
predicted_labels = np.argmax(conv_model.predict(data_array, verbose=0), axis=1)
history = conv_model_history
pred = conv_model.predict(x_test, verbose=0)
'''

MIL = '''
# keras.io/examples/vision/attention_mil_classification: bags of BAG_SIZE instances as a list of Inputs through
# shared Dense layers, the MILAttentionLayer (add_weight in build from a list of input shapes, ops.tensordot of each
# instance with its weights, gated by ops.sigmoid, ops.stack of the scores on a new leading axis, ops.softmax over
# it, the list alpha[i] back), layers.multiply / layers.concatenate, class weights, ModelCheckpoint of the best
# weights and EarlyStopping, load_weights, the attention read through keras.Model(model.input,
# model.get_layer("alpha").output); 24 bags of 3 random 8x8 "digits" (a bag positive when it holds a 7) instead
# of MNIST, 2 epochs, one model in the ensemble, weight_params_dim 16 and Dense widths 32 / 16
BAG_COUNT, VAL_BAG_COUNT, BAG_SIZE, ENSEMBLE_AVG_COUNT, POSITIVE_CLASS = 24, 8, 3, 1, 7
rng = np.random.default_rng(0)
def create_bags(input_data, input_labels, positive_class, bag_count, instance_count):
    bags, bag_labels = [], []
    input_data = np.divide(input_data, 255.0)
    count = 0
    for _ in range(bag_count):
        index = rng.choice(input_data.shape[0], instance_count, replace=False)
        instances_data = input_data[index]
        instances_labels = input_labels[index]
        bag_label = 0
        if positive_class in instances_labels:
            bag_label = 1
            count += 1
        bags.append(instances_data)
        bag_labels.append(np.array([bag_label]))
    return (list(np.swapaxes(bags, 0, 1)), np.array(bag_labels))

x_all = rng.integers(0, 256, (200, 8, 8)).astype("float32")
y_all = rng.integers(0, 10, 200)
train_data, train_labels = create_bags(x_all[:150], y_all[:150], POSITIVE_CLASS, BAG_COUNT, BAG_SIZE)
val_data, val_labels = create_bags(x_all[150:], y_all[150:], POSITIVE_CLASS, VAL_BAG_COUNT, BAG_SIZE)

class MILAttentionLayer(layers.Layer):
    def __init__(self, weight_params_dim, kernel_initializer="glorot_uniform", kernel_regularizer=None,
                 use_gated=False, **kwargs):
        super().__init__(**kwargs)
        self.weight_params_dim = weight_params_dim
        self.use_gated = use_gated
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.v_init = self.kernel_initializer
        self.w_init = self.kernel_initializer
        self.u_init = self.kernel_initializer
        self.v_regularizer = self.kernel_regularizer
        self.w_regularizer = self.kernel_regularizer
        self.u_regularizer = self.kernel_regularizer

    def build(self, input_shape):
        input_dim = input_shape[0][1]
        self.v_weight_params = self.add_weight(shape=(input_dim, self.weight_params_dim), initializer=self.v_init,
                                               name="v", regularizer=self.v_regularizer, trainable=True)
        self.w_weight_params = self.add_weight(shape=(self.weight_params_dim, 1), initializer=self.w_init,
                                               name="w", regularizer=self.w_regularizer, trainable=True)
        if self.use_gated:
            self.u_weight_params = self.add_weight(shape=(input_dim, self.weight_params_dim),
                                                   initializer=self.u_init, name="u",
                                                   regularizer=self.u_regularizer, trainable=True)
        else:
            self.u_weight_params = None
        self.input_built = True

    def call(self, inputs):
        instances = [self.compute_attention_scores(instance) for instance in inputs]
        instances = ops.stack(instances)
        alpha = ops.softmax(instances, axis=0)
        return [alpha[i] for i in range(alpha.shape[0])]

    def compute_attention_scores(self, instance):
        original_instance = instance
        instance = ops.tanh(ops.tensordot(instance, self.v_weight_params, axes=1))
        if self.use_gated:
            instance = instance * ops.sigmoid(ops.tensordot(original_instance, self.u_weight_params, axes=1))
        return ops.tensordot(instance, self.w_weight_params, axes=1)

def create_model(instance_shape):
    inputs, embeddings = [], []
    shared_dense_layer_1 = layers.Dense(32, activation="relu")
    shared_dense_layer_2 = layers.Dense(16, activation="relu")
    for _ in range(BAG_SIZE):
        inp = layers.Input(instance_shape)
        flatten = layers.Flatten()(inp)
        dense_1 = shared_dense_layer_1(flatten)
        dense_2 = shared_dense_layer_2(dense_1)
        inputs.append(inp)
        embeddings.append(dense_2)
    alpha = MILAttentionLayer(weight_params_dim=16, kernel_regularizer=keras.regularizers.L2(0.01), use_gated=True,
                              name="alpha")(embeddings)
    multiply_layers = [layers.multiply([alpha[i], embeddings[i]]) for i in range(len(alpha))]
    concat = layers.concatenate(multiply_layers, axis=1)
    output = layers.Dense(2, activation="softmax")(concat)
    return keras.Model(inputs, output)

def compute_class_weights(labels):
    negative_count = len(np.where(labels == 0)[0])
    positive_count = len(np.where(labels == 1)[0])
    total_count = negative_count + positive_count
    return {0: (1 / negative_count) * (total_count / 2), 1: (1 / positive_count) * (total_count / 2)}

instance_shape = train_data[0][0].shape
models = [create_model(instance_shape) for _ in range(ENSEMBLE_AVG_COUNT)]
model = models[0]
probe = [d[:8] for d in train_data]
# --- train
def train(train_data, train_labels, val_data, val_labels, model):
    file_path = out + "/best_model.weights.h5"
    model_checkpoint = keras.callbacks.ModelCheckpoint(file_path, monitor="val_loss", verbose=0, mode="min",
                                                       save_best_only=True, save_weights_only=True)
    early_stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10, mode="min")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    global history
    history = model.fit(train_data, train_labels, validation_data=(val_data, val_labels), epochs=2,
                        class_weight=compute_class_weights(train_labels), batch_size=1,
                        callbacks=[early_stopping, model_checkpoint], verbose=0)
    model.load_weights(file_path)
    return model

trained_models = [train(train_data, train_labels, val_data, val_labels, model) for model in models]

def predict(data, labels, trained_models):
    models_predictions, models_attention_weights, models_losses, models_accuracies = [], [], [], []
    for model in trained_models:
        predictions = model.predict(data, verbose=0)
        models_predictions.append(predictions)
        intermediate_model = keras.Model(model.input, model.get_layer("alpha").output)
        intermediate_predictions = intermediate_model.predict(data, verbose=0)
        attention_weights = np.squeeze(np.swapaxes(intermediate_predictions, 1, 0))
        models_attention_weights.append(attention_weights)
        loss, accuracy = model.evaluate(data, labels, verbose=0)
        models_losses.append(loss)
        models_accuracies.append(accuracy)
    return (np.sum(models_predictions, axis=0) / ENSEMBLE_AVG_COUNT,
            np.sum(models_attention_weights, axis=0) / ENSEMBLE_AVG_COUNT)

class_predictions, attention_params = predict(val_data, val_labels, trained_models)
pred = class_predictions
'''

EFFICIENTNET = '''
# keras.io/examples/vision/image_classification_efficientnet_fine_tuning: EfficientNetB0(include_top=False,
# input_tensor=...) under its img_augmentation Sequential (RandomRotation, RandomTranslation, RandomFlip,
# RandomContrast), frozen (model.trainable = False), a new top (GlobalAveragePooling2D, BatchNormalization,
# Dropout, Dense softmax) trained, then unfreeze_model: the last 20 layers but BatchNormalization trainable
# again and the model compiled anew with a smaller learning rate; 32 random 32x32 images of 4 classes instead of
# Stanford Dogs' 224x224, weights=None instead of "imagenet" (no download), the last 20 layers as written,
# one epoch each
IMG_SIZE, NUM_CLASSES, batch_size = 32, 4, 16
rng = np.random.default_rng(0)
x_train = rng.integers(0, 256, (32, IMG_SIZE, IMG_SIZE, 3)).astype("float32")
y_train = keras.utils.to_categorical(rng.integers(0, NUM_CLASSES, 32), NUM_CLASSES)
x_test, y_test = x_train[:16], y_train[:16]
img_augmentation_layers = [
    layers.RandomRotation(factor=0.15),
    layers.RandomTranslation(height_factor=0.1, width_factor=0.1),
    layers.RandomFlip(),
    layers.RandomContrast(factor=0.1),
]
def img_augmentation(images):
    for layer in img_augmentation_layers:
        images = layer(images)
    return images

def build_model(num_classes):
    inputs = layers.Input(shape=(IMG_SIZE, IMG_SIZE, 3))
    x = img_augmentation(inputs)
    model = keras.applications.EfficientNetB0(include_top=False, input_tensor=x, weights=None)
    model.trainable = False
    x = layers.GlobalAveragePooling2D(name="avg_pool")(model.output)
    x = layers.BatchNormalization()(x)
    top_dropout_rate = 0.2
    x = layers.Dropout(top_dropout_rate, name="top_dropout")(x)
    outputs = layers.Dense(num_classes, activation="softmax", name="pred")(x)
    model = keras.Model(inputs, outputs, name="EfficientNet")
    optimizer = keras.optimizers.Adam(learning_rate=1e-2)
    model.compile(optimizer=optimizer, loss="categorical_crossentropy", metrics=["accuracy"])
    return model

model = build_model(num_classes=NUM_CLASSES)
probe = x_train[:4]
# --- train
epochs = 1
hist = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_data=(x_test, y_test),
                 verbose=0)

def unfreeze_model(model):
    for layer in model.layers[-20:]:
        if not isinstance(layer, layers.BatchNormalization):
            layer.trainable = True
    optimizer = keras.optimizers.Adam(learning_rate=1e-5)
    model.compile(optimizer=optimizer, loss="categorical_crossentropy", metrics=["accuracy"])

unfreeze_model(model)
trainable_count = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_data=(x_test, y_test),
                    verbose=0)
pred = model.predict(x_test, verbose=0)
'''

SUPER_RES = '''
# keras.io/examples/vision/super_resolution_sub_pixel: ESPCN on inputs of any size (Input((None, None, 1))),
# Conv2D with orthogonal kernels, its DepthToSpace layer written in keras.ops (ops.shape of the input unpacked,
# ops.reshape to rank 6, ops.transpose, ops.reshape), MSE, the ESPCNCallback's PSNR per test batch, the best
# weights checkpointed (save_weights_only) and loaded back; 8 random 36x36 crops (their 12x12 area means as the
# inputs) as arrays instead of BSDS500's 300x300 in a tf.data pipeline, widths 16/16/8 instead of 64/64/32,
# 2 epochs of one batch; the ESPCNCallback keeps its PSNRs instead of printing them and plotting predictions
import math
crop_size, upscale_factor = 36, 3
rng = np.random.default_rng(0)
train_y = rng.random((8, crop_size, crop_size, 1)).astype("float32")
train_x = train_y.reshape(8, 12, 3, 12, 3, 1).mean(axis=(2, 4))
valid_x, valid_y = train_x[:4], train_y[:4]

class DepthToSpace(layers.Layer):
    def __init__(self, block_size):
        super().__init__()
        self.block_size = block_size

    def call(self, input):
        batch, height, width, depth = ops.shape(input)
        depth = depth // (self.block_size**2)

        x = ops.reshape(input, [batch, height, width, self.block_size, self.block_size, depth])
        x = ops.transpose(x, [0, 1, 3, 2, 4, 5])
        x = ops.reshape(x, [batch, height * self.block_size, width * self.block_size, depth])
        return x

def get_model(upscale_factor=3, channels=1):
    conv_args = {"activation": "relu", "kernel_initializer": "orthogonal", "padding": "same"}
    inputs = keras.Input(shape=(None, None, channels))
    x = layers.Conv2D(16, 5, **conv_args)(inputs)
    x = layers.Conv2D(16, 3, **conv_args)(x)
    x = layers.Conv2D(8, 3, **conv_args)(x)
    x = layers.Conv2D(channels * (upscale_factor**2), 3, **conv_args)(x)
    outputs = DepthToSpace(upscale_factor)(x)
    return keras.Model(inputs, outputs)

class ESPCNCallback(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.psnrs = []

    def on_epoch_begin(self, epoch, logs=None):
        self.psnr = []

    def on_epoch_end(self, epoch, logs=None):
        self.psnrs.append(np.mean(self.psnr))

    def on_test_batch_end(self, batch, logs=None):
        self.psnr.append(10 * math.log10(1 / logs["loss"]))

model = get_model(upscale_factor=upscale_factor, channels=1)
probe = train_x[:4]
# --- train
early_stopping_callback = keras.callbacks.EarlyStopping(monitor="loss", patience=10)
checkpoint_filepath = out + "/checkpoint.weights.h5"
model_checkpoint_callback = keras.callbacks.ModelCheckpoint(filepath=checkpoint_filepath, save_weights_only=True,
                                                            monitor="loss", mode="min", save_best_only=True)
espcn = ESPCNCallback()
callbacks = [espcn, early_stopping_callback, model_checkpoint_callback]
loss_fn = keras.losses.MeanSquaredError()
optimizer = keras.optimizers.Adam(learning_rate=0.001)
model.compile(optimizer=optimizer, loss=loss_fn)
history = model.fit(train_x, train_y, batch_size=8, epochs=2, callbacks=callbacks, validation_data=(valid_x, valid_y),
                    verbose=0)
model.load_weights(checkpoint_filepath)
out_img_y = model.predict(np.expand_dims(train_x[5], axis=0), verbose=0)[0] * 255.0
out_img_y = out_img_y.clip(0, 255)
pred = model.predict(valid_x, verbose=0)
'''

STFT = '''
# keras.io/examples/audio/stft: its two models on raw audio of any length (InputLayer((None, 1))): a non-trainable
# STFTSpectrogram(mode="log") before Conv1D / LayerNormalization / MaxPooling1D / GlobalMaxPooling1D, and three
# trainable STFTSpectrogram(padding="same", expand_dims=True) of different frame lengths concatenated as the
# channels of an image model, keras.applications.MobileNet(include_top=False, pooling="max"), EarlyStopping
# restoring the best weights; 48 random 1-second clips at 4 kHz instead of ESC-10's 5 seconds at 16 kHz, Conv1D
# widths and kernels cut to the shorter clips, fft_length 256 instead of 2048, MobileNet with alpha=0.25 and
# weights=None (no download), 2 epochs
SAMPLE_RATE, NUM_CLASSES, BATCH_SIZE, EPOCHS = 4000, 10, 16, 2
rng = np.random.default_rng(0)
train_x = (rng.standard_normal((48, SAMPLE_RATE, 1)) * 0.1).astype("float32")
train_y = rng.integers(0, NUM_CLASSES, 48)
valid_x, valid_y, test_x, test_y = train_x[:16], train_y[:16], train_x[16:32], train_y[16:32]

model1d = keras.Sequential(
    [
        layers.InputLayer((None, 1)),
        layers.STFTSpectrogram(mode="log", frame_length=SAMPLE_RATE * 40 // 1000,
                               frame_step=SAMPLE_RATE * 15 // 1000, trainable=False),
        layers.Conv1D(8, 8, activation="relu"),
        layers.Conv1D(16, 4, activation="relu"),
        layers.LayerNormalization(),
        layers.MaxPooling1D(4),
        layers.Conv1D(16, 3, activation="relu"),
        layers.Conv1D(32, 3, activation="relu"),
        layers.Conv1D(32, 2, activation="relu"),
        layers.LayerNormalization(),
        layers.Dropout(0.5),
        layers.GlobalMaxPooling1D(),
        layers.Dense(32, activation="relu"),
        layers.Dense(32, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(NUM_CLASSES, activation="softmax"),
    ],
    name="model_1d_non_trainble_stft",
)
model1d.compile(optimizer=keras.optimizers.Adam(1e-5), loss="sparse_categorical_crossentropy", metrics=["accuracy"])

input = layers.Input((None, 1))
spectrograms = [
    layers.STFTSpectrogram(mode="log", frame_length=SAMPLE_RATE * frame_size // 1000,
                           frame_step=SAMPLE_RATE * 15 // 1000, fft_length=256, padding="same", expand_dims=True)(input)
    for frame_size in [30, 40, 50]
]
multi_spectrograms = layers.Concatenate(axis=-1)(spectrograms)
img_model = keras.applications.MobileNet(include_top=False, pooling="max", alpha=0.25, weights=None)
output = img_model(multi_spectrograms)
output = layers.Dropout(0.5)(output)
output = layers.Dense(32, activation="relu")(output)
output = layers.Dense(32, activation="relu")(output)
output = layers.Dense(NUM_CLASSES, activation="softmax")(output)
model2d = keras.Model(input, output, name="model_2d_trainble_stft")
model2d.compile(optimizer=keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model = model2d
probe = train_x[:4]
# --- train
history_model1d = model1d.fit(train_x, train_y, batch_size=BATCH_SIZE, validation_data=(valid_x, valid_y),
                              epochs=EPOCHS, verbose=0,
                              callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss", patience=EPOCHS,
                                                                       restore_best_weights=True)])
history_model2d = model2d.fit(train_x, train_y, batch_size=BATCH_SIZE, validation_data=(valid_x, valid_y),
                              epochs=EPOCHS, verbose=0,
                              callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss", patience=EPOCHS,
                                                                       restore_best_weights=True)])
_, test_acc1 = model1d.evaluate(test_x, test_y, verbose=0)
_, test_acc2 = model2d.evaluate(test_x, test_y, verbose=0)
history = history_model2d
pred = model2d.predict(test_x, verbose=0)
'''

CONV_LSTM = '''
# keras.io/examples/vision/conv_lstm: next-frame prediction on sequences of any length (Input(shape=(None, h, w, 1)))
# by three ConvLSTM2D(return_sequences=True) with BatchNormalization and a Conv3D sigmoid, binary crossentropy,
# Adam, EarlyStopping and ReduceLROnPlateau, then frames predicted one after another from the first ten
# (np.concatenate of the model's last output); 16 random sequences of 6 frames of 16x16 instead of Moving MNIST's
# 20 of 64x64, 8 filters instead of 64, 2 epochs, 3 predicted frames
rng = np.random.default_rng(0)
dataset = (rng.random((20, 6, 16, 16, 1)) > 0.7).astype("float32")
train_dataset, val_dataset = dataset[:16], dataset[16:]
def create_shifted_frames(data):
    x = data[:, 0 : data.shape[1] - 1, :, :]
    y = data[:, 1 : data.shape[1], :, :]
    return x, y
x_train, y_train = create_shifted_frames(train_dataset)
x_val, y_val = create_shifted_frames(val_dataset)

inp = layers.Input(shape=(None, *x_train.shape[2:]))
x = layers.ConvLSTM2D(filters=8, kernel_size=(5, 5), padding="same", return_sequences=True, activation="relu")(inp)
x = layers.BatchNormalization()(x)
x = layers.ConvLSTM2D(filters=8, kernel_size=(3, 3), padding="same", return_sequences=True, activation="relu")(x)
x = layers.BatchNormalization()(x)
x = layers.ConvLSTM2D(filters=8, kernel_size=(1, 1), padding="same", return_sequences=True, activation="relu")(x)
x = layers.Conv3D(filters=1, kernel_size=(3, 3, 3), activation="sigmoid", padding="same")(x)
model = keras.models.Model(inp, x)
model.compile(loss=keras.losses.binary_crossentropy, optimizer=keras.optimizers.Adam())
probe = x_train[:4]
# --- train
early_stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10)
reduce_lr = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=5)
epochs, batch_size = 2, 16
history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_data=(x_val, y_val),
                    callbacks=[early_stopping, reduce_lr], verbose=0)
example = val_dataset[0]
frames = example[:3, ...]
original_frames = example[3:, ...]
for _ in range(3):
    new_prediction = model.predict(np.expand_dims(frames, axis=0), verbose=0)
    new_prediction = np.squeeze(new_prediction, axis=0)
    predicted_frame = np.expand_dims(new_prediction[-1, ...], axis=0)
    frames = np.concatenate((frames, predicted_frame), axis=0)
pred = frames
'''

ENDPOINT = '''
# keras.io/examples/keras_recipes/endpoint_layer_pattern: LogisticEndpoint, a layer taking the targets and sample
# weights as inputs and adding BinaryCrossentropy(from_logits=True) of them with self.add_loss, compiled without
# loss= and fit on a dict of inputs without y; the inference model without targets given the trained weights; the
# same endpoint in a subclassed model (LogReg) taking the dict; 32 random rows of 64 features instead of 1000 of
# 764 (one batch an epoch)
class LogisticEndpoint(keras.layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, logits, targets=None, sample_weight=None):
        if targets is not None:
            loss = self.loss_fn(targets, logits, sample_weight)
            self.add_loss(loss)
        return ops.softmax(logits)

inputs = keras.Input((64,), name="inputs")
logits = keras.layers.Dense(1)(inputs)
targets = keras.Input((1,), name="targets")
sample_weight = keras.Input((1,), name="sample_weight")
preds = LogisticEndpoint()(logits, targets, sample_weight)
model = keras.Model([inputs, targets, sample_weight], preds)
rng = np.random.default_rng(0)
data = {
    "inputs": rng.random((32, 64)),
    "targets": rng.random((32, 1)),
    "sample_weight": rng.random((32, 1)),
}
probe = {k: v[:8] for k, v in data.items()}
# --- train
model.compile(keras.optimizers.Adam(1e-3))
history = model.fit(data, epochs=2, verbose=0)

inputs = keras.Input((64,), name="inputs")
logits = keras.layers.Dense(1)(inputs)
preds = LogisticEndpoint()(logits, targets=None, sample_weight=None)
inference_model = keras.Model(inputs, preds)
inference_model.set_weights(model.get_weights())
preds = inference_model.predict(rng.random((16, 64)), verbose=0)

class LogReg(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.logistic_endpoint = LogisticEndpoint()

    def call(self, inputs):
        logits = self.dense(inputs["inputs"])
        preds = self.logistic_endpoint(logits=logits, targets=inputs["targets"], sample_weight=inputs["sample_weight"])
        return preds

logreg = LogReg()
logreg.compile(keras.optimizers.Adam(1e-3))
logreg_history = logreg.fit(data, epochs=2, verbose=0)
pred = preds
'''

RUNS = {"cct": CCT, "tabtransformer": TABTRANSFORMER, "eeg_signal_classification": EEG,
        "attention_mil_classification": MIL}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_keras_io_program_runs_unchanged(name, tmp_path):
    """CCT (a custom layer's add_weight as a tensor: convert_to_tensor, slice, broadcast_to), TabTransformer
    (thirteen scalar Inputs, ops.stack of embeddings), EEG classification (class weights, AUC / Precision /
    Recall, the legacy .h5 checkpoint) and attention MIL (ops.stack on axis 0, softmax over it): from Keras's
    initial weights the same predictions, then the same run (dropout, augmentation or shuffled single-sample
    batches: Keras's own draws)"""
    k, b = _run_both(RUNS[name], tmp_path)
    _same_run_shape(k, b, tmp_path)


def test_char_lstm_text_generation_trains_and_samples_as_keras(tmp_path):
    """One batch per epoch holds every sentence, so the bool one-hot data, RMSprop and the LSTM give Keras's
    losses, weights and predictions; the sampled texts have Keras's lengths (their characters come from NumPy's
    global generator, which Keras's fit also draws from to shuffle)"""
    def trained(scope):
        return {"weights": scope["model"].get_weights(), "texts": scope["texts"]}
    k, b = _run_both(CHAR_LSTM, tmp_path, extra=trained)
    _same_run_shape(k, b, tmp_path)
    np.testing.assert_allclose(b["history"].history["loss"], k["history"]["loss"], rtol=1e-4)
    for wb, wk in zip(b["model"].get_weights(), k["extra"]["weights"], strict=True):
        np.testing.assert_allclose(wb, wk, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(b["pred"], k["pred"], rtol=1e-3, atol=1e-4)
    assert [len(t) for t in b["texts"]] == [len(t) for t in k["extra"]["texts"]] == [20] * 4



def test_endpoint_layer_pattern_trains_as_keras(tmp_path):
    """A layer adding BinaryCrossentropy(from_logits=True)(targets, logits, sample_weight) with add_loss, the
    targets and weights inputs of the model feeding only that loss, compile() without loss= and fit on a dict
    without y; the subclassed LogReg calls it with keywords only (logits=...) on the dict it is given: one batch an
    epoch, so Keras's losses and weights"""
    def trained(scope):
        return {"weights": scope["model"].get_weights(), "logreg": sorted(scope["logreg_history"].history)}
    k, b = _run_both(ENDPOINT, tmp_path, extra=trained)
    _same_run_shape(k, b, tmp_path)
    np.testing.assert_allclose(b["history"].history["loss"], k["history"]["loss"], rtol=1e-5)
    for wb, wk in zip(b["model"].get_weights(), k["extra"]["weights"], strict=True):
        np.testing.assert_allclose(wb, wk, rtol=1e-5, atol=1e-6)
    assert sorted(b["logreg_history"].history) == list(k["extra"]["logreg"]) == ["loss"]
    assert np.isfinite(b["logreg_history"].history["loss"]).all()


def _set_seeded(w0, scope):
    """Weights for a model too big to record (EfficientNetB0: 4M): the same seeded arrays set into Keras's model
    and boundfit's, layer by layer (Keras's random layers' seed states left out); a BatchNormalization's scale and
    variance positive; the stem's Normalization left as made"""
    keras_side, rng = scope["keras"] is not boundfit, np.random.default_rng(0)
    for layer in _flat(scope["model"]):
        if type(layer).__name__ == "Normalization":   # (not adapted: mean 0, variance 1 in both)
            continue
        if keras_side:
            vs = [v for v in layer.weights if "seed_generator" not in v.path]
            shapes = [tuple(v.shape) for v in vs]
        else:
            shapes = [] if type(layer).__name__ == "Const" else [w.shape for w in layer.get_weights()]
        bn = type(layer).__name__ == "BatchNormalization"
        arrays = [rng.uniform(0.5, 1.5, s).astype("float32") if bn and k in (0, 3) else
                  (rng.standard_normal(s) * 0.1).astype("float32") for k, s in enumerate(shapes)]
        if keras_side:
            for v, a in zip(vs, arrays):
                v.assign(a)
        elif arrays:
            layer.set_weights(arrays)


def test_efficientnet_fine_tuning_runs_unchanged(tmp_path):
    """EfficientNetB0 under the program's augmentation, frozen, then its last 20 layers but BatchNormalization
    made trainable and compiled anew: from the same weights the same predictions, then the same run and the same
    count of trainable weights as Keras"""
    def trainable(scope):
        return {"trainable_count": scope["trainable_count"]}
    k, b = _run_both(EFFICIENTNET, tmp_path, weights=lambda scope: _set_seeded(None, scope), copy=_set_seeded,
                     extra=trainable)
    _same_run_shape(k, b, tmp_path)
    assert b["trainable_count"] == k["extra"]["trainable_count"]


@pytest.mark.parametrize("program, error, match", [
    (SUPER_RES, OpNotSupportedError, "2 axes of unknown length"),
    (STFT, ValueError, "STFTSpectrogram .*needs a known length"),
    (CONV_LSTM, NotImplementedError, "ConvLSTM2D .*known steps, got T=None"),
], ids=["super_resolution_sub_pixel", "stft", "conv_lstm"])
def test_keras_io_programs_on_variable_length_axes_are_refused_by_name(program, error, match, tmp_path):
    """ESPCN's DepthToSpace reshapes by ops.shape of an Input((None, None, 1)) (two unknown axes), the STFT
    models and the ConvLSTM next-frame model take signals or sequences of any length (Input((None, 1)),
    Input((None, h, w, 1))) into layers that unroll or frame them: boundfit traces call() once for every length,
    so each says what it needs instead of running"""
    with pytest.raises(error, match=match):
        exec(program.split("# --- train")[0], _scope(boundfit, str(tmp_path)))
