"""Ten more keras.io programs (issue 33), across vision, segmentation, audio,
text, structured data and generation, written from their Keras 3 code with the
data replaced by small synthetic arrays and run with `keras` bound to Keras 3
and to boundfit, as tests/test_keras_io_examples.py runs its fifteen: split at
'# --- train', Keras's initial weights copied in, the same predictions on the
program's probe; after training the same history keys and lengths, output
shapes and files; where the steps are deterministic (no dropout, no shuffling)
the same losses and weights. Keras's runs are recorded (helpers/keras_recorded.py,
under this file's source). Sizes are cut down, each cut said in the program's
first comment; nothing else is changed, except where a test says so."""

import os

import numpy as np
import pytest

import boundfit

import keras_ref
from helpers import keras_recorded

CONVMIXER = '''
# keras.io/examples/vision/convmixer: ConvMixer-256/8 (patch stem Conv2D, gelu + BatchNormalization, DepthwiseConv2D
# mixers with residual Add, 1x1 Conv2D), AdamW, the best checkpoint (.keras) reloaded with load_weights;
# filters 16 and depth 2 instead of 256 and 8, images 16x16
rng = np.random.default_rng(0)
x_train = rng.integers(0, 256, (48, 16, 16, 3)).astype("float32")
y_train = rng.integers(0, 10, 48)
x_val, y_val, x_test, y_test = x_train[:16], y_train[:16], x_train[16:32], y_train[16:32]
learning_rate, weight_decay, num_epochs = 0.001, 0.0001, 2

def activation_block(x):
    x = layers.Activation("gelu")(x)
    return layers.BatchNormalization()(x)

def conv_stem(x, filters: int, patch_size: int):
    x = layers.Conv2D(filters, kernel_size=patch_size, strides=patch_size)(x)
    return activation_block(x)

def conv_mixer_block(x, filters: int, kernel_size: int):
    x0 = x
    x = layers.DepthwiseConv2D(kernel_size=kernel_size, padding="same")(x)
    x = layers.Add()([activation_block(x), x0])
    x = layers.Conv2D(filters, kernel_size=1)(x)
    x = activation_block(x)
    return x

def get_conv_mixer_256_8(image_size=16, filters=16, depth=2, kernel_size=5, patch_size=2, num_classes=10):
    inputs = keras.Input((image_size, image_size, 3))
    x = layers.Rescaling(scale=1.0 / 255)(inputs)
    x = conv_stem(x, filters, patch_size)
    for _ in range(depth):
        x = conv_mixer_block(x, filters, kernel_size)
    x = layers.GlobalAvgPool2D()(x)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)

model = get_conv_mixer_256_8()
probe = x_train[:8]
# --- train
def run_experiment(model):
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    checkpoint_filepath = out + "/checkpoint.keras"
    checkpoint_callback = keras.callbacks.ModelCheckpoint(checkpoint_filepath, monitor="val_accuracy",
                                                          save_best_only=True, save_weights_only=False)
    history = model.fit(x_train, y_train, batch_size=16, validation_data=(x_val, y_val), epochs=num_epochs,
                        callbacks=[checkpoint_callback], verbose=0)
    model.load_weights(checkpoint_filepath)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    return history, model

history, model = run_experiment(model)
pred = model.predict(x_test, verbose=0)
'''

UNET = '''
# keras.io/examples/vision/oxford_pets_image_segmentation: the Xception-style U-Net (SeparableConv2D down,
# Conv2DTranspose and UpSampling2D up, residual projections), per-pixel sparse categorical crossentropy,
# the best checkpoint, the predicted masks by argmax; images 32x32, widths [8, 16] / [16, 8, 4]
img_size, num_classes = (32, 32), 3
rng = np.random.default_rng(0)
x_train = rng.random((24,) + img_size + (3,)).astype("float32")
y_train = rng.integers(0, num_classes, (24,) + img_size + (1,)).astype("uint8")
x_val, y_val = x_train[:8], y_train[:8]

def get_model(img_size, num_classes):
    inputs = keras.Input(shape=img_size + (3,))
    x = layers.Conv2D(4, 3, strides=2, padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x
    for filters in [8, 16]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(filters, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x
    for filters in [16, 8, 4]:
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.UpSampling2D(2)(x)
        residual = layers.UpSampling2D(2)(previous_block_activation)
        residual = layers.Conv2D(filters, 1, padding="same")(residual)
        x = layers.add([x, residual])
        previous_block_activation = x
    outputs = layers.Conv2D(num_classes, 3, activation="softmax", padding="same")(x)
    model = keras.Model(inputs, outputs)
    return model

model = get_model(img_size, num_classes)
probe = x_train[:4]
# --- train
model.compile(optimizer=keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy")
callbacks = [keras.callbacks.ModelCheckpoint(out + "/oxford_segmentation.keras", save_best_only=True)]
epochs = 2
history = model.fit(x_train, y_train, batch_size=8, epochs=epochs, validation_data=(x_val, y_val),
                    callbacks=callbacks, verbose=0)
val_preds = model.predict(x_val, verbose=0)
mask = np.argmax(val_preds[0], axis=-1)
mask = np.expand_dims(mask, axis=-1)
pred = val_preds
'''

SPEAKER_RECOGNITION = '''
# keras.io/examples/audio/speaker_recognition_using_cnn: residual blocks of Conv1D with a 1x1 shortcut, MaxPool1D,
# AveragePooling1D(3, 3), Dense head, EarlyStopping and the best checkpoint; the FFT magnitudes of 1-second
# clips replaced by 256 random values, widths 4..16 instead of 16..128
SAMPLING_RATE = 512
rng = np.random.default_rng(0)
class_names = ["Benjamin_Netanyau", "Jens_Stoltenberg", "Julia_Gillard", "Magaret_Tarcher", "Nelson_Mandela"]
x_train = np.abs(rng.standard_normal((40, SAMPLING_RATE // 2, 1))).astype("float32")
y_train = rng.integers(0, len(class_names), 40)
x_valid, y_valid = x_train[:8], y_train[:8]

def residual_block(x, filters, conv_num=3, activation="relu"):
    s = keras.layers.Conv1D(filters, 1, padding="same")(x)
    for i in range(conv_num - 1):
        x = keras.layers.Conv1D(filters, 3, padding="same")(x)
        x = keras.layers.Activation(activation)(x)
    x = keras.layers.Conv1D(filters, 3, padding="same")(x)
    x = keras.layers.Add()([x, s])
    x = keras.layers.Activation(activation)(x)
    return keras.layers.MaxPool1D(pool_size=2, strides=2)(x)

def build_model(input_shape, num_classes):
    inputs = keras.layers.Input(shape=input_shape, name="input")
    x = residual_block(inputs, 4, 2)
    x = residual_block(x, 8, 2)
    x = residual_block(x, 16, 3)
    x = residual_block(x, 16, 3)
    x = residual_block(x, 16, 3)
    x = keras.layers.AveragePooling1D(pool_size=3, strides=3)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(32, activation="relu")(x)
    x = keras.layers.Dense(16, activation="relu")(x)
    outputs = keras.layers.Dense(num_classes, activation="softmax", name="output")(x)
    return keras.models.Model(inputs=inputs, outputs=outputs)

model = build_model((SAMPLING_RATE // 2, 1), len(class_names))
probe = x_train[:8]
# --- train
model.compile(optimizer="Adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model_save_filename = out + "/model.keras"
earlystopping_cb = keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)
mdlcheckpoint_cb = keras.callbacks.ModelCheckpoint(model_save_filename, monitor="val_accuracy", save_best_only=True)
history = model.fit(x_train, y_train, batch_size=8, epochs=2, validation_data=(x_valid, y_valid),
                    callbacks=[earlystopping_cb, mdlcheckpoint_cb], verbose=0)
print(model.evaluate(x_valid, y_valid, verbose=0))
y_pred = model.predict(x_valid, verbose=0)
labels = np.argmax(y_pred, axis=-1)
pred = y_pred
'''

ADDITION_RNN = '''
# keras.io/examples/nlp/addition_rnn: the CharacterTable, questions "a+b" one-hot encoded, an LSTM encoder,
# RepeatVector, an LSTM decoder with return_sequences and a per-step softmax Dense, one-epoch fits in a loop
# with decoded samples; 64 questions and 16 units instead of 50000 and 128
class CharacterTable:
    def __init__(self, chars):
        self.chars = sorted(set(chars))
        self.char_indices = dict((c, i) for i, c in enumerate(self.chars))
        self.indices_char = dict((i, c) for i, c in enumerate(self.chars))

    def encode(self, C, num_rows):
        x = np.zeros((num_rows, len(self.chars)))
        for i, c in enumerate(C):
            x[i, self.char_indices[c]] = 1
        return x

    def decode(self, x, calc_argmax=True):
        if calc_argmax:
            x = x.argmax(axis=-1)
        return "".join(self.indices_char[x] for x in x)

TRAINING_SIZE, DIGITS, REVERSE = 64, 3, True
MAXLEN = DIGITS + 1 + DIGITS
chars = "0123456789+ "
ctable = CharacterTable(chars)
questions, expected, seen = [], [], set()
rs = np.random.RandomState(0)
while len(questions) < TRAINING_SIZE:
    f = lambda: int("".join(rs.choice(list("0123456789")) for i in range(rs.randint(1, DIGITS + 1))))
    a, b = f(), f()
    key = tuple(sorted((a, b)))
    if key in seen:
        continue
    seen.add(key)
    q = "{}+{}".format(a, b)
    query = q + " " * (MAXLEN - len(q))
    ans = str(a + b)
    ans += " " * (DIGITS + 1 - len(ans))
    if REVERSE:
        query = query[::-1]
    questions.append(query)
    expected.append(ans)
x = np.zeros((len(questions), MAXLEN, len(chars)), dtype=bool)
y = np.zeros((len(questions), DIGITS + 1, len(chars)), dtype=bool)
for i, sentence in enumerate(questions):
    x[i] = ctable.encode(sentence, MAXLEN)
for i, sentence in enumerate(expected):
    y[i] = ctable.encode(sentence, DIGITS + 1)
split_at = len(x) - len(x) // 10
(x_train, x_val) = x[:split_at], x[split_at:]
(y_train, y_val) = y[:split_at], y[split_at:]

num_layers = 1
model = keras.Sequential()
model.add(layers.Input((MAXLEN, len(chars))))
model.add(layers.LSTM(16))
model.add(layers.RepeatVector(DIGITS + 1))
for _ in range(num_layers):
    model.add(layers.LSTM(16, return_sequences=True))
model.add(layers.Dense(len(chars), activation="softmax"))
probe = x_train[:8]
# --- train
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
epochs, BATCH_SIZE = 3, 16
guesses = []
for epoch in range(1, epochs):
    history = model.fit(x_train, y_train, batch_size=BATCH_SIZE, epochs=1, validation_data=(x_val, y_val),
                        verbose=0)
    for i in range(3):
        rowx, rowy = x_val[np.array([i])], y_val[np.array([i])]
        preds = np.argmax(model.predict(rowx, verbose=0), axis=-1)
        q = ctable.decode(rowx[0])
        correct = ctable.decode(rowy[0])
        guess = ctable.decode(preds[0], calc_argmax=False)
        guesses.append(guess)
pred = model.predict(x_val, verbose=0)
'''

STRUCTURED = '''
# keras.io/examples/structured_data/structured_data_classification_from_scratch before FeatureSpace: thirteen
# named Inputs (the heart-disease columns), Normalization adapted per numerical feature, IntegerLookup /
# StringLookup (one_hot) adapted per categorical one, concatenate, Dense, a dict of arrays to fit and predict
rng = np.random.default_rng(0)
n = 96
columns = {
    "sex": rng.integers(0, 2, n), "cp": rng.integers(0, 5, n), "fbs": rng.integers(0, 2, n),
    "restecg": rng.integers(0, 3, n), "exang": rng.integers(0, 2, n), "ca": rng.integers(0, 4, n),
    "thal": rng.choice(["fixed", "normal", "reversible"], n), "age": rng.integers(29, 77, n).astype("float32"),
    "trestbps": rng.integers(94, 200, n).astype("float32"), "chol": rng.integers(126, 564, n).astype("float32"),
    "thalach": rng.integers(71, 202, n).astype("float32"), "oldpeak": rng.random(n).astype("float32") * 6,
    "slope": rng.integers(1, 4, n),
}
target = rng.integers(0, 2, n)
train = {k: v[:80, None] for k, v in columns.items()}
val = {k: v[80:, None] for k, v in columns.items()}
train_y, val_y = target[:80], target[80:]

def encode_numerical_feature(feature, name, data):
    normalizer = layers.Normalization()
    normalizer.adapt(data[name])
    encoded_feature = normalizer(feature)
    return encoded_feature

def encode_categorical_feature(feature, name, data, is_string):
    lookup_class = layers.StringLookup if is_string else layers.IntegerLookup
    lookup = lookup_class(output_mode="one_hot")
    lookup.adapt(data[name])
    encoded_feature = lookup(feature)
    return encoded_feature

sex = keras.Input(shape=(1,), name="sex", dtype="int64")
cp = keras.Input(shape=(1,), name="cp", dtype="int64")
fbs = keras.Input(shape=(1,), name="fbs", dtype="int64")
restecg = keras.Input(shape=(1,), name="restecg", dtype="int64")
exang = keras.Input(shape=(1,), name="exang", dtype="int64")
ca = keras.Input(shape=(1,), name="ca", dtype="int64")
thal = keras.Input(shape=(1,), name="thal", dtype="string")
age = keras.Input(shape=(1,), name="age")
trestbps = keras.Input(shape=(1,), name="trestbps")
chol = keras.Input(shape=(1,), name="chol")
thalach = keras.Input(shape=(1,), name="thalach")
oldpeak = keras.Input(shape=(1,), name="oldpeak")
slope = keras.Input(shape=(1,), name="slope")
all_inputs = [sex, cp, fbs, restecg, exang, ca, thal, age, trestbps, chol, thalach, oldpeak, slope]

sex_encoded = encode_categorical_feature(sex, "sex", train, False)
cp_encoded = encode_categorical_feature(cp, "cp", train, False)
fbs_encoded = encode_categorical_feature(fbs, "fbs", train, False)
restecg_encoded = encode_categorical_feature(restecg, "restecg", train, False)
exang_encoded = encode_categorical_feature(exang, "exang", train, False)
ca_encoded = encode_categorical_feature(ca, "ca", train, False)
thal_encoded = encode_categorical_feature(thal, "thal", train, True)
age_encoded = encode_numerical_feature(age, "age", train)
trestbps_encoded = encode_numerical_feature(trestbps, "trestbps", train)
chol_encoded = encode_numerical_feature(chol, "chol", train)
thalach_encoded = encode_numerical_feature(thalach, "thalach", train)
oldpeak_encoded = encode_numerical_feature(oldpeak, "oldpeak", train)
slope_encoded = encode_numerical_feature(slope, "slope", train)

all_features = layers.concatenate(
    [sex_encoded, cp_encoded, fbs_encoded, restecg_encoded, exang_encoded, slope_encoded, ca_encoded, thal_encoded,
     age_encoded, trestbps_encoded, chol_encoded, thalach_encoded, oldpeak_encoded]
)
x = layers.Dense(32, activation="relu")(all_features)
x = layers.Dropout(0.5)(x)
output = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(all_inputs, output)
probe = {k: v[:8] for k, v in train.items()}
# --- train
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
history = model.fit(train, train_y, batch_size=32, epochs=2, validation_data=(val, val_y), verbose=0)
sample = {"age": 60, "sex": 1, "cp": 1, "trestbps": 145, "chol": 233, "fbs": 1, "restecg": 2, "thalach": 150,
          "exang": 0, "oldpeak": 2.3, "slope": 3, "ca": 0, "thal": "fixed"}
input_dict = {name: np.array([value]) for name, value in sample.items()}
predictions = model.predict(input_dict, verbose=0)
pred = model.predict(val, verbose=0)
'''

MULTI_LABEL = '''
# keras.io/examples/nlp/multi_label_classification: subject labels multi-hot by StringLookup(output_mode=
# "multi_hot") (adapted, its vocabulary inverted), abstracts by TextVectorization(ngrams=2, output_mode="tf_idf"),
# a shallow MLP Sequential built by fit, then Sequential([text_vectorizer, shallow_mlp_model]) predicting from
# strings; 64 synthetic abstracts, two terms each, widths 32 and 16 instead of 512 and 256
rng = np.random.default_rng(0)
words = ["graph", "neural", "network", "image", "learning", "deep", "model", "data", "vision", "text", "robot",
         "policy", "attention", "sparse", "kernel", "label"]
subjects = ["cs.CV", "cs.LG", "stat.ML", "cs.AI", "cs.RO"]
abstracts = np.array([" ".join(rng.choice(words, rng.integers(5, 15))) for _ in range(64)], dtype=object)
terms = np.array([rng.choice(subjects, 2, replace=False) for _ in range(64)], dtype=object)
lookup = layers.StringLookup(output_mode="multi_hot")
lookup.adapt(terms)
vocab = lookup.get_vocabulary()

def invert_multi_hot(encoded_labels):
    hot_indices = np.argwhere(encoded_labels == 1.0)[..., 0]
    return np.take(vocab, hot_indices)

vocabulary = set()
for a in abstracts:
    vocabulary.update(a.lower().split())
vocabulary_size = len(vocabulary)
text_vectorizer = layers.TextVectorization(max_tokens=vocabulary_size, ngrams=2, output_mode="tf_idf")
text_vectorizer.adapt(abstracts)
x_train = np.asarray(text_vectorizer(abstracts[:48]))
y_train = np.asarray(lookup(terms[:48]))
x_val, y_val = np.asarray(text_vectorizer(abstracts[48:])), np.asarray(lookup(terms[48:]))
labels = invert_multi_hot(y_train[0])

def make_model():
    shallow_mlp_model = keras.Sequential(
        [
            layers.Dense(32, activation="relu"),
            layers.Dense(16, activation="relu"),
            layers.Dense(lookup.vocabulary_size(), activation="sigmoid"),
        ]
    )
    return shallow_mlp_model

shallow_mlp_model = make_model()
shallow_mlp_model.build((None, x_train.shape[1]))
model = shallow_mlp_model
probe = x_train[:8]
# --- train
epochs = 2
shallow_mlp_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["binary_accuracy"])
history = shallow_mlp_model.fit(x_train, y_train, batch_size=16, validation_data=(x_val, y_val), epochs=epochs,
                                verbose=0)
_, binary_acc = shallow_mlp_model.evaluate(x_val, y_val, verbose=0)
model_for_inference = keras.Sequential([text_vectorizer, shallow_mlp_model])
predicted_probabilities = model_for_inference.predict(abstracts[48:56], verbose=0)
for i, text in enumerate(abstracts[48:53]):
    predicted_proba = [proba for proba in predicted_probabilities[i]]
    top_3_labels = [x for _, x in sorted(zip(predicted_probabilities[i], lookup.get_vocabulary()),
                                          key=lambda pair: pair[0], reverse=True)][:3]
pred = predicted_probabilities
'''

NER = '''
# keras.io/examples/nlp/ner_transformers: NERModel (a Model subclass) of TokenAndPositionEmbedding (positions
# from ops.arange(ops.shape(inputs)[-1])) and a TransformerBlock layer, trained with CustomNonPaddingTokenLoss
# (a keras.losses.Loss subclass: per-token crossentropy masked where the tag is padding, summed over the batch
# and divided by the count of tokens); 48 sentences of 12 tokens, embed_dim 8
num_tags, vocab_size, maxlen = 10, 40, 12
rng = np.random.default_rng(0)
lengths = rng.integers(3, maxlen + 1, 48)
x_train = np.zeros((48, maxlen), "int32")
y_train = np.zeros((48, maxlen), "int32")
for i, n in enumerate(lengths):
    x_train[i, :n] = rng.integers(2, vocab_size, n)
    y_train[i, :n] = rng.integers(1, num_tags, n)

class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential(
            [
                keras.layers.Dense(ff_dim, activation="relu"),
                keras.layers.Dense(embed_dim),
            ]
        )
        self.layernorm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = keras.layers.Dropout(rate)
        self.dropout2 = keras.layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)

class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = keras.layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = keras.layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, inputs):
        maxlen = ops.shape(inputs)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        position_embeddings = self.pos_emb(positions)
        token_embeddings = self.token_emb(inputs)
        return token_embeddings + position_embeddings

class NERModel(keras.Model):
    def __init__(self, num_tags, vocab_size, maxlen=128, embed_dim=32, num_heads=2, ff_dim=32):
        super().__init__()
        self.embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
        self.transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
        self.dropout1 = layers.Dropout(0.1)
        self.ff = layers.Dense(ff_dim, activation="relu")
        self.dropout2 = layers.Dropout(0.1)
        self.ff_final = layers.Dense(num_tags, activation="softmax")

    def call(self, inputs, training=False):
        x = self.embedding_layer(inputs)
        x = self.transformer_block(x)
        x = self.dropout1(x, training=training)
        x = self.ff(x)
        x = self.dropout2(x, training=training)
        x = self.ff_final(x)
        return x

class CustomNonPaddingTokenLoss(keras.losses.Loss):
    def __init__(self, name="custom_ner_loss"):
        super().__init__(name=name)

    def call(self, y_true, y_pred):
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=False, reduction=None)
        loss = loss_fn(y_true, y_pred)
        mask = ops.cast((y_true > 0), dtype="float32")
        loss = loss * mask
        return ops.sum(loss) / ops.sum(mask)

ner_model = NERModel(num_tags, vocab_size, maxlen=maxlen, embed_dim=8, num_heads=2, ff_dim=16)
ner_model(keras.Input(shape=(maxlen,), dtype="int32"))
model = ner_model
probe = x_train[:8]
# --- train
loss = CustomNonPaddingTokenLoss()
ner_model.compile(optimizer="adam", loss=loss)
history = ner_model.fit(x_train, y_train, batch_size=16, epochs=2, shuffle=False, verbose=0)
sample_input = x_train[:1]
output = ner_model.predict(sample_input, verbose=0)
prediction = np.argmax(output, axis=-1)[0]
pred = ner_model.predict(x_train[:8], verbose=0)
'''

MINI_GPT = '''
# keras.io/examples/generative/text_generation_with_miniature_gpt: the causal mask built from the batch size
# (ops.arange, ops.cast, ops.reshape, ops.tile by a tensor of ops.shape(inputs)[0]), TransformerBlock with
# MultiHeadAttention(attention_mask=), TokenAndPositionEmbedding, the model with outputs [logits, x] compiled
# with loss=[loss_fn, None], and the TextGenerator callback's sampling; vocab 30, maxlen 10, embed 8
vocab_size, maxlen, embed_dim, num_heads, feed_forward_dim = 30, 10, 8, 2, 16
rng = np.random.default_rng(0)
tokens = rng.integers(1, vocab_size, (48, maxlen + 1)).astype("int32")
x_train, y_train = tokens[:, :-1], tokens[:, 1:]

def causal_attention_mask(batch_size, n_dest, n_src, dtype):
    i = ops.arange(n_dest)[:, None]
    j = ops.arange(n_src)
    m = i >= j - n_src + n_dest
    mask = ops.cast(m, dtype)
    mask = ops.reshape(mask, [1, n_dest, n_src])
    mult = ops.concatenate([ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])], 0)
    return ops.tile(mask, mult)

class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads, embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs):
        input_shape = ops.shape(inputs)
        batch_size = input_shape[0]
        seq_len = input_shape[1]
        causal_mask = causal_attention_mask(batch_size, seq_len, seq_len, "bool")
        attention_output = self.att(inputs, inputs, attention_mask=causal_mask)
        attention_output = self.dropout1(attention_output)
        out1 = self.layernorm1(inputs + attention_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output)
        return self.layernorm2(out1 + ffn_output)

class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(0, maxlen, 1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions

def create_model():
    inputs = layers.Input(shape=(maxlen,), dtype="int32")
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, feed_forward_dim)
    x = transformer_block(x)
    outputs = layers.Dense(vocab_size)(x)
    model = keras.Model(inputs=inputs, outputs=[outputs, x])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", loss=[loss_fn, None])
    return model

model = create_model()
probe = x_train[:8]
# --- train
class TextGenerator(keras.callbacks.Callback):
    def __init__(self, max_tokens, start_tokens, index_to_word, top_k=10, print_every=1):
        self.max_tokens = max_tokens
        self.start_tokens = start_tokens
        self.index_to_word = index_to_word
        self.print_every = print_every
        self.k = top_k

    def sample_from(self, logits):
        logits, indices = ops.top_k(logits, k=self.k, sorted=True)
        indices = np.asarray(indices).astype("int32")
        preds = keras.activations.softmax(ops.expand_dims(logits, 0))[0]
        preds = np.asarray(preds).astype("float32")
        return np.random.choice(indices, p=preds)

    def detokenize(self, number):
        return self.index_to_word[number]

    def on_epoch_end(self, epoch, logs=None):
        start_tokens = [_ for _ in self.start_tokens]
        if (epoch + 1) % self.print_every != 0:
            return
        num_tokens_generated = 0
        tokens_generated = []
        while num_tokens_generated <= self.max_tokens:
            pad_len = maxlen - len(start_tokens)
            sample_index = len(start_tokens) - 1
            if pad_len < 0:
                x = start_tokens[:maxlen]
                sample_index = maxlen - 1
            elif pad_len > 0:
                x = start_tokens + [0] * pad_len
            else:
                x = start_tokens
            x = np.array([x])
            y, _ = self.model.predict(x, verbose=0)
            sample_token = self.sample_from(y[0][sample_index])
            tokens_generated.append(sample_token)
            start_tokens.append(sample_token)
            num_tokens_generated = len(tokens_generated)
        self.generated = " ".join([self.detokenize(_) for _ in self.start_tokens + tokens_generated])

vocab = ["", "[UNK]"] + [f"w{i}" for i in range(2, vocab_size)]
text_gen_callback = TextGenerator(2, [3, 4, 5], vocab)
history = model.fit(x_train, y_train, batch_size=16, verbose=0, epochs=2, callbacks=[text_gen_callback])
pred = model.predict(x_train[:8], verbose=0)[0]
'''

DISTILLATION = '''
# keras.io/examples/vision/knowledge_distillation: the Distiller (a Model subclass whose compile() takes its own
# arguments and whose compute_loss() mixes the student's loss with the KL divergence to the teacher's softened
# predictions), the teacher trained first, the student from scratch as a clone; widths 8/16 and 4/8
rng = np.random.default_rng(0)
x_train = rng.random((64, 28, 28, 1)).astype("float32")
y_train = rng.integers(0, 10, 64)
x_test, y_test = x_train[:16], y_train[:16]

class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)
        loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        return loss

    def call(self, x):
        return self.student(x)

teacher = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(8, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
        layers.Flatten(),
        layers.Dense(10),
    ],
    name="teacher",
)
student = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(4, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(8, (3, 3), strides=(2, 2), padding="same"),
        layers.Flatten(),
        layers.Dense(10),
    ],
    name="student",
)
student_scratch = keras.models.clone_model(student)
model = teacher
probe = x_train[:8]
# --- train
teacher.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
teacher.fit(x_train, y_train, epochs=2, shuffle=False, verbose=0)
teacher.evaluate(x_test, y_test, verbose=0)

distiller = Distiller(student=student, teacher=teacher)
distiller.compile(
    optimizer=keras.optimizers.Adam(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
    student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    distillation_loss_fn=keras.losses.KLDivergence(),
    alpha=0.1,
    temperature=10,
)
history = distiller.fit(x_train, y_train, epochs=2, shuffle=False, verbose=0)
results = distiller.evaluate(x_test, y_test, verbose=0)

student_scratch.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
student_scratch.fit(x_train, y_train, epochs=2, shuffle=False, verbose=0)
student_scratch.evaluate(x_test, y_test, verbose=0)
pred = student.predict(x_test, verbose=0)
'''

VIT = '''
# keras.io/examples/vision/image_classification_with_vision_transformer: its data_augmentation (Normalization
# adapted, Resizing, RandomFlip, RandomRotation, RandomZoom), Patches (ops.image.extract_patches, ops.reshape by
# ops.shape), PatchEncoder (Dense + Embedding of ops.arange positions), Transformer blocks, AdamW with top-5;
# images 16x16 (resized to 16), patches 4, projection 8, 1 block instead of 72, 6, 64 and 8
rng = np.random.default_rng(0)
num_classes, input_shape = 10, (16, 16, 3)
x_train = rng.random((48, 16, 16, 3)).astype("float32") * 255
y_train = rng.integers(0, num_classes, (48, 1))
x_test, y_test = x_train[:16], y_train[:16]
learning_rate, weight_decay, batch_size, num_epochs = 0.001, 0.0001, 16, 2
image_size, patch_size = 16, 4
num_patches = (image_size // patch_size) ** 2
projection_dim, num_heads = 8, 2
transformer_units = [projection_dim * 2, projection_dim]
transformer_layers = 1
mlp_head_units = [16, 8]

data_augmentation = keras.Sequential(
    [
        layers.Normalization(),
        layers.Resizing(image_size, image_size),
        layers.RandomFlip("horizontal"),
        layers.RandomRotation(factor=0.02),
        layers.RandomZoom(height_factor=0.2, width_factor=0.2),
    ],
    name="data_augmentation",
)
data_augmentation.layers[0].adapt(x_train)

def mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = layers.Dense(units, activation=keras.activations.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x

class Patches(layers.Layer):
    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def call(self, images):
        input_shape = ops.shape(images)
        batch_size = input_shape[0]
        height = input_shape[1]
        width = input_shape[2]
        channels = input_shape[3]
        num_patches_h = height // self.patch_size
        num_patches_w = width // self.patch_size
        patches = keras.ops.image.extract_patches(images, size=self.patch_size)
        patches = ops.reshape(
            patches,
            (batch_size, num_patches_h * num_patches_w, self.patch_size * self.patch_size * channels),
        )
        return patches

    def get_config(self):
        config = super().get_config()
        config.update({"patch_size": self.patch_size})
        return config

class PatchEncoder(layers.Layer):
    def __init__(self, num_patches, projection_dim):
        super().__init__()
        self.num_patches = num_patches
        self.projection = layers.Dense(units=projection_dim)
        self.position_embedding = layers.Embedding(input_dim=num_patches, output_dim=projection_dim)

    def call(self, patch):
        positions = ops.expand_dims(ops.arange(start=0, stop=self.num_patches, step=1), axis=0)
        projected_patches = self.projection(patch)
        encoded = projected_patches + self.position_embedding(positions)
        return encoded

    def get_config(self):
        config = super().get_config()
        config.update({"num_patches": self.num_patches})
        return config

def create_vit_classifier():
    inputs = keras.Input(shape=input_shape)
    augmented = data_augmentation(inputs)
    patches = Patches(patch_size)(augmented)
    encoded_patches = PatchEncoder(num_patches, projection_dim)(patches)
    for _ in range(transformer_layers):
        x1 = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
        attention_output = layers.MultiHeadAttention(num_heads=num_heads, key_dim=projection_dim, dropout=0.1)(x1, x1)
        x2 = layers.Add()([attention_output, encoded_patches])
        x3 = layers.LayerNormalization(epsilon=1e-6)(x2)
        x3 = mlp(x3, hidden_units=transformer_units, dropout_rate=0.1)
        encoded_patches = layers.Add()([x3, x2])
    representation = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
    representation = layers.Flatten()(representation)
    representation = layers.Dropout(0.5)(representation)
    features = mlp(representation, hidden_units=mlp_head_units, dropout_rate=0.5)
    logits = layers.Dense(num_classes)(features)
    model = keras.Model(inputs=inputs, outputs=logits)
    return model

model = create_vit_classifier()
probe = x_train[:8]
# --- train
def run_experiment(model):
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
            keras.metrics.SparseTopKCategoricalAccuracy(5, name="top-5-accuracy"),
        ],
    )
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

MLP_MIXER = '''
# keras.io/examples/vision/mlp_image_classification: the MLP-Mixer (Patches by ops.image.extract_patches,
# MLPMixerLayer: LayerNormalization, token mixing on ops.transpose(x, (0, 2, 1)) through a Sequential of
# Dense, channel mixing), AdamW, ReduceLROnPlateau and EarlyStopping; images 16x16 resized to 16, patches 4,
# embedding 8, 2 blocks instead of 64, 8, 256 and 4 (no positional encoding, as the example's first run)
rng = np.random.default_rng(0)
num_classes, input_shape = 10, (16, 16, 3)
x_train = rng.random((48, 16, 16, 3)).astype("float32") * 255
y_train = rng.integers(0, num_classes, (48, 1))
x_test, y_test = x_train[:16], y_train[:16]
weight_decay, batch_size, num_epochs, dropout_rate = 0.0001, 16, 2, 0.2
image_size, patch_size = 16, 4
num_patches = (image_size // patch_size) ** 2
embedding_dim, num_blocks = 8, 2

def build_classifier(blocks, positional_encoding=False):
    inputs = layers.Input(shape=input_shape)
    augmented = data_augmentation(inputs)
    patches = Patches(patch_size)(augmented)
    x = layers.Dense(units=embedding_dim)(patches)
    x = blocks(x)
    representation = layers.GlobalAveragePooling1D()(x)
    representation = layers.Dropout(rate=dropout_rate)(representation)
    logits = layers.Dense(num_classes)(representation)
    return keras.Model(inputs=inputs, outputs=logits)

data_augmentation = keras.Sequential(
    [
        layers.Normalization(),
        layers.Resizing(image_size, image_size),
        layers.RandomFlip("horizontal"),
        layers.RandomZoom(height_factor=0.2, width_factor=0.2),
    ],
    name="data_augmentation",
)
data_augmentation.layers[0].adapt(x_train)

class Patches(layers.Layer):
    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def call(self, x):
        patches = keras.ops.image.extract_patches(x, self.patch_size)
        batch_size = keras.ops.shape(patches)[0]
        num_patches = keras.ops.shape(patches)[1] * keras.ops.shape(patches)[2]
        patch_dim = keras.ops.shape(patches)[3]
        out = keras.ops.reshape(patches, (batch_size, num_patches, patch_dim))
        return out

class MLPMixerLayer(layers.Layer):
    def __init__(self, num_patches, hidden_units, dropout_rate, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mlp1 = keras.Sequential(
            [
                layers.Dense(units=num_patches, activation="gelu"),
                layers.Dense(units=num_patches),
                layers.Dropout(rate=dropout_rate),
            ]
        )
        self.mlp2 = keras.Sequential(
            [
                layers.Dense(units=num_patches, activation="gelu"),
                layers.Dense(units=hidden_units),
                layers.Dropout(rate=dropout_rate),
            ]
        )
        self.normalize = layers.LayerNormalization(epsilon=1e-6)

    def build(self, input_shape):
        return super().build(input_shape)

    def call(self, inputs):
        x = self.normalize(inputs)
        x_channels = keras.ops.transpose(x, axes=(0, 2, 1))
        mlp1_outputs = self.mlp1(x_channels)
        mlp1_outputs = keras.ops.transpose(mlp1_outputs, axes=(0, 2, 1))
        x = mlp1_outputs + inputs
        x_patches = self.normalize(x)
        mlp2_outputs = self.mlp2(x_patches)
        x = x + mlp2_outputs
        return x

mlpmixer_blocks = keras.Sequential([MLPMixerLayer(num_patches, embedding_dim, dropout_rate) for _ in range(num_blocks)])
learning_rate = 0.005
mlpmixer_classifier = build_classifier(mlpmixer_blocks)
model = mlpmixer_classifier
probe = x_train[:8]
# --- train
def run_experiment(model):
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=weight_decay)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="acc"),
            keras.metrics.SparseTopKCategoricalAccuracy(5, name="top5-acc"),
        ],
    )
    reduce_lr = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=5)
    early_stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10, restore_best_weights=True)
    history = model.fit(x=x_train, y=y_train, batch_size=batch_size, epochs=num_epochs, validation_split=0.1,
                        callbacks=[early_stopping, reduce_lr], verbose=0)
    _, accuracy, top_5_accuracy = model.evaluate(x_test, y_test, verbose=0)
    return history

history = run_experiment(mlpmixer_classifier)
pred = model.predict(x_test, verbose=0)
'''

PROGRAMS = {
    "convmixer": CONVMIXER,
    "oxford_pets_unet": UNET,
    "speaker_recognition": SPEAKER_RECOGNITION,
    "addition_rnn": ADDITION_RNN,
    "multi_label_classification": MULTI_LABEL,
    "miniature_gpt": MINI_GPT,
}


def _scope(keras, out):
    return {"keras": keras, "ops": keras.ops, "layers": keras.layers, "np": np, "out": out}


KERAS_SIDE = {   # what Keras 3 on JAX cannot run, replaced in its reference run by the same numbers
    # the miniature GPT: ops.tile by the traced batch size (the example says it runs on TensorFlow or torch); the
    # (1, T, T) mask, which Keras's attention broadcasts over the batch as the tiled one
    "    return ops.tile(mask, mult)": "    return mask",
    # multi-label classification: a model of string inputs (Keras on JAX takes none); the vectorizer then the MLP
    "model_for_inference.predict(abstracts[48:56], verbose=0)":
        "shallow_mlp_model.predict(text_vectorizer(abstracts[48:56]), verbose=0)",
}


def _program(program, keras_side):
    for a, b in KERAS_SIDE.items() if keras_side else ():
        program = program.replace(a, b)
    return program


def _keras_run(program, weights, extra):
    def compute():
        import tempfile
        keras = keras_ref.load()
        build, train = _program(program, True).split("# --- train")
        with tempfile.TemporaryDirectory() as out:
            scope = _scope(keras, out)
            exec(build, scope)
            km, probe = scope["model"], scope["probe"]
            rec = {"w0": weights(scope), "probe": probe, "probe_pred": km.predict(probe, verbose=0)}
            exec(train, scope)
            rec.update(history=scope["history"].history, pred=np.asarray(scope["pred"]), files=os.listdir(out),
                       extra=extra(scope) if extra else None)
        return rec
    return keras_recorded.case(compute)


def _flat(model):
    """The model's layers, a nested model's (Sequential) in its place"""
    return [m for l in model.layers for m in (_flat(l) if hasattr(l, "layers") else [l])]


def _by_layer(scope):   # Keras's, layer by layer: its random layers' seed states left out (boundfit draws its own)
    ws = [[np.asarray(v) for v in l.weights if "seed_generator" not in v.path] for l in _flat(scope["model"])]
    return [w for w in ws if w]


def _copy_by_layer(w0, scope):   # a custom layer's weights in Keras's order (by attribute), not the engine's
    layers = [l for l in _flat(scope["model"]) if type(l).__name__ != "Const" and l.get_weights()]
    assert len(layers) == len(w0)   # (Const: boundfit's per-sample constants, which Keras holds as ops)
    for layer, w in zip(layers, w0):
        layer.set_weights(w)


def _run_both(program, tmp_path, weights=_by_layer, copy=_copy_by_layer, extra=None):
    """Keras's recorded results, and boundfit's scope after the whole program, started from Keras's initial
    weights (weights(scope) reads them, copy(w0, scope) sets them; default layer by layer), its probe predicting
    as Keras's"""
    k = _keras_run(program, weights, extra)
    build, train = _program(program, False).split("# --- train")
    out = tmp_path / "boundfit"
    out.mkdir()
    b = _scope(boundfit, str(out))
    exec(build, b)
    copy(k["w0"], b)
    got, want = b["model"].predict(k["probe"], verbose=0), k["probe_pred"]
    for g, w in zip(*((got, want) if isinstance(want, list) else ([got], [want])), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    exec(train, b)
    return k, b


def _same_run_shape(k, b, tmp_path):
    hk = {key: v for key, v in k["history"].items() if key != "learning_rate"}
    hb = {key: v for key, v in b["history"].history.items() if key != "learning_rate"}
    assert sorted(hb) == sorted(hk)
    assert all(len(hb[key]) == len(hk[key]) for key in hk)
    assert np.shape(b["pred"]) == np.shape(k["pred"])
    assert sorted(os.listdir(tmp_path / "boundfit")) == sorted(k["files"])
    assert all(np.isfinite(v).all() for v in hb.values()) and np.isfinite(b["pred"]).all()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_keras_io_program_runs_unchanged(name, tmp_path):
    k, b = _run_both(PROGRAMS[name], tmp_path)
    _same_run_shape(k, b, tmp_path)


def _parts(names, of="model"):
    """weights / copy layer by layer: of a subclassed model by attribute (Keras orders its weights so), or of
    several models of the program by name (of=None)"""
    def weights(scope):
        return {n: (getattr(scope[of], n) if of else scope[n]).get_weights() for n in names}

    def copy(w0, scope):
        for n in names:
            (getattr(scope[of], n) if of else scope[n]).set_weights(w0[n])
    return weights, copy


NER_PARTS = ("embedding_layer", "transformer_block", "ff", "ff_final")
NER_EVAL = "ev = ner_model.evaluate(x_train, y_train, batch_size=16, verbose=0)\nhistory = ner_model.fit"


def test_ner_transformer_with_its_masked_token_loss_evaluates_and_trains_as_keras(tmp_path):
    """NERModel (a Model subclass of custom layers) trained with CustomNonPaddingTokenLoss, a Loss subclass
    calling SparseCategoricalCrossentropy(reduction=None) on (batch, T) tag ids and returning the batch's sum
    over its count of real tokens (ops.sum / ops.sum: a ratio of sums over the batch): from Keras's weights the
    same predictions and the same evaluation of that loss before training; then it trains (dropout: Keras's own
    draws) to the same history keys; micro-batches, which cannot keep a ratio of batch sums, are refused."""
    weights, copy = _parts(NER_PARTS)
    program = NER.replace("history = ner_model.fit", NER_EVAL)
    k, b = _run_both(program, tmp_path, weights, copy, extra=lambda scope: {"ev": scope["ev"]})
    np.testing.assert_allclose(b["ev"], k["extra"]["ev"], rtol=1e-5)
    assert sorted(b["history"].history) == sorted(k["history"]) == ["loss"]
    assert b["pred"].shape == k["pred"].shape and np.isfinite(b["history"].history["loss"]).all()
    with pytest.raises(ValueError, match="mixes the samples of a batch"):
        b["ner_model"].fit(b["x_train"], b["y_train"], batch_size=16, micro_batch=8, verbose=0)


DISTILLER_PARTS = ("teacher", "student", "student_scratch")


def test_knowledge_distillation_distiller_trains_as_keras(tmp_path):
    """The Distiller: compile() with its own arguments calling super().compile(optimizer, metrics), compute_loss()
    (without training=) mixing SparseCategoricalCrossentropy(from_logits=True) of class ids with KLDivergence of
    the softened teacher and student predictions, the teacher called inside it; no dropout and no shuffling, so
    from Keras's initial weights the teacher, the distiller and the student from scratch train to Keras's
    losses, metrics, evaluation and weights."""
    weights, copy = _parts(DISTILLER_PARTS, of=None)

    def trained(scope):
        return {"weights": weights(scope), "results": scope["results"]}
    k, b = _run_both(DISTILLATION, tmp_path, weights, copy, trained)
    hk, hb = k["history"], b["history"].history
    assert sorted(hb) == sorted(hk) == ["loss", "sparse_categorical_accuracy"]
    np.testing.assert_allclose(hb["loss"], hk["loss"], rtol=1e-4)
    np.testing.assert_allclose(hb["sparse_categorical_accuracy"], hk["sparse_categorical_accuracy"], atol=1.5 / 64)
    np.testing.assert_allclose(b["results"], k["extra"]["results"], rtol=1e-4, atol=1.5 / 16)
    for n in DISTILLER_PARTS:
        for wb, wk in zip(b[n].get_weights(), k["extra"]["weights"][n], strict=True):
            np.testing.assert_allclose(wb, wk, rtol=1e-3, atol=1e-4, err_msg=n)
    np.testing.assert_allclose(b["pred"], k["pred"], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name, program", [("vit", VIT), ("mlp_mixer", MLP_MIXER)])
def test_vit_and_mlp_mixer_run_unchanged(name, program, tmp_path):
    """ViT (Patches by ops.image.extract_patches reshaped by ops.shape; PatchEncoder's position Embedding called
    on expand_dims(arange(n), 0), a batch of one) and MLP-Mixer (token mixing on a transposed axis), with their
    data_augmentation (Normalization, Resizing, RandomFlip, RandomRotation, RandomZoom) as written: they run as
    Keras."""
    k, b = _run_both(program, tmp_path)
    _same_run_shape(k, b, tmp_path)


def test_structured_data_classification_with_lookups_in_the_model_runs_unchanged(tmp_path):
    """Thirteen named Inputs, the string column through StringLookup inside the model: Keras 3 runs this only
    on TensorFlow (its lookup layers and string inputs are tf.data's on JAX; keras.io moved the example to
    FeatureSpace), so boundfit alone: it trains, validates and predicts from a dict of arrays and from one
    sample's dict of Python values, and its lookups one-hot encode as adapted."""
    b = _scope(boundfit, str(tmp_path))
    exec(STRUCTURED, b)
    assert sorted(b["history"].history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert b["pred"].shape == (16, 1) and b["predictions"].shape == (1, 1)
    assert all(np.isfinite(v).all() for v in b["history"].history.values()) and np.isfinite(b["pred"]).all()
    lookup, = [l for l in b["model"].layers if type(l).__name__ == "StringLookup"]
    hot = np.asarray(lookup(np.array([["normal"], ["fixed"], ["nope"]], dtype=object)))
    assert hot.shape == (3, 4) and (hot.sum(axis=1) == 1).all() and hot[2, 0] == 1   # "nope": the OOV index 0
