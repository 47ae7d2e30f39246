"""golden_models.py - the check of a change that must not change behaviour (a restructuring): plans to the
byte (every row, engine buffer and op; train / evaluate / predict / micro-batch) and the history, weights,
predictions and evaluate after a two-epoch fit of 13 models covering the layer families, recorded before and
compared after.

    PYTHONPATH=python python tools/golden_models.py capture before.json    (on the tree before the change)
    PYTHONPATH=python python tools/golden_models.py capture after.json
    python tools/golden_models.py compare before.json after.json           (exit 1 on any difference)
A model whose build fails is recorded with its error text (compared too). Rows measured from RSS (BLAS buffers)
are left out: they vary between runs of the same build.
"""
import hashlib
import json
import os
import sys

os.environ.setdefault("BF_NUM_THREADS", "1")
import numpy as np


def h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def models(k):
    L = k.layers
    o = k.ops

    def mlp():
        m = k.Sequential([L.Input((20,)), L.Dense(32, activation="relu"), L.BatchNormalization(), L.Dropout(0.3),
                          L.Dense(16, activation="gelu", kernel_regularizer=k.regularizers.l2(1e-3)),
                          L.Dense(5, activation="softmax")])
        return m, "sparse_categorical_crossentropy", ["accuracy"], (20,), ("int", 5)

    def cnn():
        m = k.Sequential([L.Input((12, 12, 3)), L.Conv2D(8, 3, padding="same", activation="relu"), L.MaxPooling2D(),
                          L.Conv2D(8, 3, strides=2, activation="elu"), L.AveragePooling2D(1), L.Flatten(),
                          L.Dense(3, activation="softmax")])
        return m, "categorical_crossentropy", ["accuracy"], (12, 12, 3), ("onehot", 3)

    def convs():
        m = k.Sequential([L.Input((10, 10, 4)), L.DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
                          L.SeparableConv2D(6, 3, activation="relu"), L.Conv2DTranspose(4, 3, strides=2),
                          L.UpSampling2D(), L.ZeroPadding2D(1), L.GlobalAveragePooling2D(), L.Dense(1)])
        return m, "mse", ["mae"], (10, 10, 4), ("float", 1)

    def conv1d():
        m = k.Sequential([L.Input((16, 3)), L.Conv1D(6, 3, padding="causal", dilation_rate=2, activation="relu"),
                          L.MaxPooling1D(2), L.Conv1DTranspose(4, 3, strides=2), L.GlobalMaxPooling1D(),
                          L.Dense(1, activation="sigmoid")])
        return m, "binary_crossentropy", ["accuracy", k.metrics.AUC()], (16, 3), ("bin", 1)

    def rnn():
        m = k.Sequential([L.Input((9,), dtype="int32"), L.Embedding(30, 8, mask_zero=True),
                          L.LSTM(8, return_sequences=True), L.GRU(6, return_sequences=True),
                          L.Bidirectional(L.SimpleRNN(5)), L.Dense(2, activation="softmax")])
        return m, "sparse_categorical_crossentropy", ["accuracy"], (9,), ("int", 2)

    def transformer():
        x = L.Input((6, 8))
        a = L.MultiHeadAttention(2, 4, dropout=0.1)(x, x, use_causal_mask=True)
        y = L.LayerNormalization()(L.Add()([x, a]))
        f = L.Dense(8)(L.Dense(16, activation="relu")(y))
        z = L.LayerNormalization(epsilon=1e-3)(L.Add()([y, f]))
        out = L.Dense(3, activation="softmax")(L.GlobalAveragePooling1D()(z))
        return k.Model(x, out), "sparse_categorical_crossentropy", ["accuracy"], (6, 8), ("int", 3)

    def merges():
        x = L.Input((8,))
        a, b = L.Dense(6, activation="tanh")(x), L.Dense(6, activation="sigmoid")(x)
        c = L.Concatenate()([L.Multiply()([a, b]), L.Average()([a, b]), L.Subtract()([a, b]), L.Maximum()([a, b]),
                             L.Minimum()([a, b])])
        out = L.Dense(1)(L.Dot(axes=1)([L.Dense(4)(c), L.Dense(4)(x)]))
        return k.Model(x, out), "huber", ["mse"], (8,), ("float", 1)

    def layout():
        m = k.Sequential([L.Input((12,)), L.Reshape((3, 4)), L.Permute((2, 1)), L.Flatten(), L.RepeatVector(2),
                          L.Flatten(), L.LeakyReLU(0.2), L.ReLU(max_value=3.0), L.Dense(2), L.Softmax()])
        return m, "categorical_crossentropy", ["categorical_accuracy"], (12,), ("onehot", 2)

    def preprocess():
        m = k.Sequential([L.Input((8, 8, 1)), L.Rescaling(1 / 4.0, offset=-0.5), L.RandomFlip("horizontal", seed=3),
                          L.RandomTranslation(0.1, 0.1, seed=4), L.Conv2D(4, 3), L.GaussianNoise(0.1),
                          L.Flatten(), L.Dense(1)])
        return m, "mae", [], (8, 8, 1), ("float", 1)

    def opsgraph():
        x = L.Input((6,))
        d = L.Dense(6)(x)
        y = o.exp(o.tanh(d)) + o.sum(d, axis=-1, keepdims=True) * 0.1
        y = o.concatenate([y[:, :3], o.square(x[:, 1:4])], axis=-1)
        return k.Model(x, L.Dense(1)(y)), "mse", [], (6,), ("float", 1)

    def custom_loss():
        def loss(yt, yp):
            return o.mean(o.square(yt - yp) + 0.1 * o.abs(yp), axis=-1)
        m = k.Sequential([L.Input((5,)), L.Dense(8, activation="swish"), L.Dense(2)])
        return m, loss, [], (5,), ("float", 2)

    def multi_out():
        x = L.Input((7,))
        hdn = L.Dense(10, activation="relu")(x)
        a = L.Dense(3, activation="softmax", name="cls")(hdn)
        b = L.Dense(1, name="reg")(hdn)
        m = k.Model(x, [a, b])
        return m, ["sparse_categorical_crossentropy", "mse"], [["accuracy"], ["mae"]], (7,), ("multi", 3)

    def norm_adapted():
        n = L.Normalization()
        n.adapt(np.random.default_rng(1).normal(3, 2, (50, 4)).astype("float32"))
        m = k.Sequential([L.Input((4,)), n, L.Dense(4, kernel_constraint=k.constraints.MaxNorm(1.0),
                                                    bias_initializer="ones"), L.Dense(1)])
        return m, "mse", [], (4,), ("float", 1)

    return dict(mlp=mlp, cnn=cnn, convs=convs, conv1d=conv1d, rnn=rnn, transformer=transformer, merges=merges,
                layout=layout, preprocess=preprocess, opsgraph=opsgraph, custom_loss=custom_loss,
                multi_out=multi_out, norm_adapted=norm_adapted)


def data(shape, ykind, n=48):
    rng = np.random.default_rng(7)
    kind, c = ykind
    if shape == (9,):
        x = rng.integers(0, 30, (n, 9)).astype("int32")
        x[:, -2:] = 0
    else:
        x = rng.normal(size=(n,) + shape).astype("float32")
    if kind == "int":
        y = rng.integers(0, c, (n,))
    elif kind == "onehot":
        y = np.eye(c, dtype="float32")[rng.integers(0, c, (n,))]
    elif kind == "bin":
        y = rng.integers(0, 2, (n, 1)).astype("float32")
    elif kind == "multi":
        y = [rng.integers(0, c, (n,)), rng.normal(size=(n, 1)).astype("float32")]
    else:
        y = rng.normal(size=(n, c)).astype("float32")
    return x, y


def plan_rows(p):
    # measured rows (BLAS buffers: RSS growth of this process) vary run to run; the plan's own rows must not
    rows = [[e.name, int(e.bytes), e.where, e.category] for e in p.breakdown if "measured" not in e.name]
    eng = p.engine_plan or {}
    return rows + [repr(eng.get(key)) for key in ("entries", "buffers", "ops", "host_bytes", "device_bytes",
                                                  "scratch_bytes")]


def capture(out):
    import boundfit as k
    res = {}
    for name, make in models(k).items():
        rec = {}
        try:
            k.utils.set_random_seed(0)
            m, loss, metrics, shape, yk = make()
            m.compile(optimizer=k.optimizers.Adam(1e-2), loss=loss, metrics=metrics)
            rec["w0"] = [h(w) for w in m.get_weights()]
            for mode in ("train", "evaluate", "predict"):
                rec["plan_" + mode] = plan_rows(m.estimate_memory(batch_size=16, mode=mode))
            rec["plan_micro"] = plan_rows(m.estimate_memory(batch_size=16, micro_batch=4))
            x, y = data(shape, yk)
            hist = m.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
            rec["hist"] = {key: [float(v) for v in vals] for key, vals in hist.history.items()}
            rec["w"] = [h(w) for w in m.get_weights()]
            pred = m.predict(x[:16], verbose=0)
            rec["pred"] = [h(p) for p in (pred if isinstance(pred, list) else [pred])]
            rec["eval"] = [float(v) for v in np.atleast_1d(m.evaluate(x, y, batch_size=16, verbose=0))]
        except Exception as e:  # recorded: compared as any other field
            rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        res[name] = rec
        print(name, "error: " + rec["error"] if "error" in rec else "ok", flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


def _drop_measured(rec):
    for key, val in rec.items():
        if key.startswith("plan_"):
            rec[key] = [r for r in val if not (isinstance(r, list) and "measured" in r[0])]
    return rec


def compare(a, b):
    A, B = json.load(open(a)), json.load(open(b))
    for d in (A, B):
        for rec in d.values():
            _drop_measured(rec)
    bad = 0
    for name in sorted(set(A) | set(B)):
        ra, rb = A.get(name, {}), B.get(name, {})
        for key in sorted(set(ra) | set(rb)):
            if ra.get(key) != rb.get(key):
                bad += 1
                print(f"DIFF {name}.{key}:\n  a={str(ra.get(key))[:400]}\n  b={str(rb.get(key))[:400]}")
    print("no difference" if not bad else f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("capture", "compare") or len(sys.argv) < 3 + (sys.argv[1] == "compare"):
        print(__doc__)
        sys.exit(0 if any(a in ("-h", "--help") for a in sys.argv[1:]) else 2)
    if sys.argv[1] == "capture":
        capture(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
