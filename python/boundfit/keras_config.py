"""Keras 3 serialization of boundfit objects and back: layer configs
(module / class_name / config / registered_name / build_config), the
Sequential model config, and compile_config (optimizer, loss, metrics).
Configs written here are what keras.saving.load_model deserializes; configs
read here are what Keras 3 writes, for every layer boundfit has."""

import inspect
import warnings

from . import activations, constraints, initializers, layers as L, regularizers, losses, metrics, optimizers, schedules

_DTYPE = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}


def _obj(module, class_name, config):
    return {"module": module, "class_name": class_name, "config": config, "registered_name": None}


# ---- layers: boundfit -> Keras ----

def _act(layer):
    return activations.name_of(layer.activation)


def _dense(l):
    return dict(units=l.units, activation=_act(l), use_bias=l.use_bias,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer),
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint))


def _conv(l):
    return dict(filters=l.filters, kernel_size=list(l.kernel_size), strides=list(l.strides), padding=l.padding,
                data_format="channels_last", dilation_rate=[1, 1], groups=1, activation=_act(l), use_bias=l.use_bias,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer),
                kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
                bias_regularizer=regularizers.serialize(l.bias_regularizer), activity_regularizer=None,
                kernel_constraint=constraints.serialize(l.kernel_constraint),
                bias_constraint=constraints.serialize(l.bias_constraint))


def _pool(l):
    return dict(pool_size=list(l.pool_size), padding=l.padding, strides=list(l.strides), data_format="channels_last")


def _bn(l):
    return dict(axis=-1, momentum=l.momentum, epsilon=l.epsilon, center=l.center, scale=l.scale,
                beta_initializer=initializers.serialize(l.beta_initializer),
                gamma_initializer=initializers.serialize(l.gamma_initializer),
                moving_mean_initializer=initializers.serialize(l.moving_mean_initializer),
                moving_variance_initializer=initializers.serialize(l.moving_variance_initializer),
                beta_regularizer=regularizers.serialize(l.beta_regularizer),
                gamma_regularizer=regularizers.serialize(l.gamma_regularizer),
                beta_constraint=constraints.serialize(l.beta_constraint),
                gamma_constraint=constraints.serialize(l.gamma_constraint))


_TO_KERAS = {
    L.Dense: _dense, L.Conv2D: _conv, L.MaxPooling2D: _pool, L.AveragePooling2D: _pool,
    L.GlobalAveragePooling2D: lambda l: dict(data_format="channels_last", keepdims=False),
    L.Flatten: lambda l: dict(data_format="channels_last"),
    L.Reshape: lambda l: dict(target_shape=list(l.target_shape)),
    L.Dropout: lambda l: dict(rate=l.rate, seed=l.seed, noise_shape=None),
    L.BatchNormalization: _bn,
    L.Activation: lambda l: dict(activation=_act(l)),
    L.ReLU: lambda l: dict(max_value=l.max_value, negative_slope=l.negative_slope, threshold=l.threshold),
    L.LeakyReLU: lambda l: dict(negative_slope=l.negative_slope),
    L.ELU: lambda l: dict(alpha=l.alpha),
    L.Softmax: lambda l: dict(axis=-1),
    L.Permute: lambda l: dict(dims=list(l.dims)),
    L.RepeatVector: lambda l: dict(n=l.n),
    L.ZeroPadding2D: lambda l: dict(padding=[list(p) for p in l.padding], data_format="channels_last"),
    L.UpSampling2D: lambda l: dict(size=list(l.size), data_format="channels_last", interpolation=l.interpolation),
    L.Rescaling: lambda l: dict(scale=l.scale, offset=l.offset),
    L.Normalization: lambda l: dict(axis=[-1], invert=False, mean=_listed(l.input_mean),
                                    variance=_listed(l.input_variance)),
    L.RandomFlip: lambda l: dict(mode=l.mode, seed=l.seed, data_format="channels_last"),
    L.RandomCrop: lambda l: dict(height=l.height, width=l.width, seed=l.seed, data_format="channels_last"),
    L.RandomTranslation: lambda l: dict(height_factor=_listed(l.height_factor), width_factor=_listed(l.width_factor),
                                        fill_mode=l.fill_mode, interpolation=l.interpolation, seed=l.seed,
                                        fill_value=l.fill_value, data_format="channels_last"),
    L.Concatenate: lambda l: dict(axis=l.axis),
}
_TO_KERAS.update({c: lambda l: {} for c in (L.Add, L.Subtract, L.Multiply, L.Average, L.Maximum, L.Minimum)})


def _listed(v):
    """a number, tuple or array as JSON has it"""
    if v is None or isinstance(v, (int, float)):
        return v
    import numpy as np
    a = np.asarray(v)
    return a.item() if a.ndim == 0 else a.tolist()


def _conv1d(l):
    return dict(_conv(l), kernel_size=list(l.kernel_size), strides=list(l.strides), dilation_rate=list(l.dilation_rate))


def _conv2d_transpose(l):
    d = _conv(l)
    del d["groups"]
    return dict(d, output_padding=None)


_TO_KERAS.update({
    L.Conv1D: _conv1d, L.Conv2DTranspose: _conv2d_transpose, L.MaxPooling1D: _pool, L.AveragePooling1D: _pool,
    L.GlobalAveragePooling1D: lambda l: dict(data_format="channels_last", keepdims=l.keepdims),
    L.GlobalMaxPooling1D: lambda l: dict(data_format="channels_last", keepdims=l.keepdims),
    L.GlobalMaxPooling2D: lambda l: dict(data_format="channels_last", keepdims=l.keepdims),
})


def _embedding(l):
    return dict(input_dim=l.input_dim, output_dim=l.output_dim,
                embeddings_initializer=initializers.serialize(l.embeddings_initializer),
                embeddings_regularizer=regularizers.serialize(l.embeddings_regularizer), activity_regularizer=None,
                embeddings_constraint=constraints.serialize(l.embeddings_constraint), mask_zero=l.mask_zero)


def _rnn(l, zero_output_for_mask=False):
    cfg = dict(return_sequences=l.return_sequences, return_state=l.return_state, go_backwards=l.go_backwards, stateful=False,
               unroll=l.unroll, zero_output_for_mask=zero_output_for_mask, units=l.units, activation=l.activation)
    if not isinstance(l, L.SimpleRNN):
        cfg["recurrent_activation"] = l.recurrent_activation
    cfg.update(use_bias=l.use_bias, kernel_initializer=initializers.serialize(l.kernel_initializer),
               recurrent_initializer=initializers.serialize(l.recurrent_initializer),
               bias_initializer=initializers.serialize(l.bias_initializer))
    if isinstance(l, L.LSTM):
        cfg["unit_forget_bias"] = l.unit_forget_bias
    cfg.update(kernel_regularizer=regularizers.serialize(l.kernel_regularizer),
               recurrent_regularizer=regularizers.serialize(l.recurrent_regularizer),
               bias_regularizer=regularizers.serialize(l.bias_regularizer), activity_regularizer=None,
               kernel_constraint=constraints.serialize(l.kernel_constraint),
               recurrent_constraint=constraints.serialize(l.recurrent_constraint),
               bias_constraint=constraints.serialize(l.bias_constraint), dropout=l.dropout,
               recurrent_dropout=l.recurrent_dropout)
    if isinstance(l, L.GRU):
        cfg["reset_after"] = True
    cfg["seed"] = l.seed
    return cfg


def _sublayer(l, name, go_backwards, zero_output_for_mask):
    cfg = dict(name=name, trainable=bool(l.trainable), dtype=dict(_DTYPE), **_rnn(l, zero_output_for_mask))
    cfg["go_backwards"] = go_backwards
    return _obj("keras.layers", type(l).__name__, cfg)


def _bidirectional(l):
    f, b = l.forward_layer, l.backward_layer or l.forward_layer
    z = l.return_sequences
    fname = "forward_" + f.name.removeprefix("forward_")
    bname = "backward_" + (b.name.removeprefix("backward_") if l.backward_layer else f.name.removeprefix("forward_"))
    return dict(merge_mode=l.merge_mode, layer=_sublayer(f, fname, f.go_backwards, z),
                backward_layer=_sublayer(b, bname, not f.go_backwards, z))


_TO_KERAS.update({L.Embedding: _embedding, L.SimpleRNN: _rnn, L.LSTM: _rnn, L.GRU: _rnn,
                  L.Bidirectional: _bidirectional})


def layer_config(layer):
    """The Keras 3 `config` dict of a boundfit layer (layer.get_config())."""
    fn = _TO_KERAS.get(type(layer))
    if fn is None:
        raise ValueError(f"layer {layer.name!r}: {type(layer).__name__} has no Keras serialization in boundfit")
    return dict(name=layer.name, trainable=bool(layer.trainable), dtype=dict(_DTYPE), **fn(layer))


def model_config(model):
    """Keras 3 serialization of a model (with compile_config when compiled): a
    Sequential here (an unbuilt one has no InputLayer or build_config, as in
    Keras; nested models as their own entries), a functional, nested or
    subclassed model as Keras's Functional (keras_graph.py)."""
    from . import keras_graph
    if keras_graph.kind(model) != keras_graph.SEQUENTIAL:
        return keras_graph.model_entry(model)
    built = model.built
    in_shape = [None] + [int(d) for d in model._input_shape] if model._input_shape is not None else None
    entries = []
    if in_shape is not None:
        entries.append(_obj("keras.layers", "InputLayer", dict(batch_shape=in_shape, dtype="float32", sparse=False,
                                                               ragged=False, name="input_layer")))
    shape = in_shape
    for layer in model._layers:
        if keras_graph.is_model(layer):
            e = keras_graph.model_entry(layer, nested=True)
        else:
            e = _obj("keras.layers", type(layer).__name__, layer_config(layer))
            if built:
                e["build_config"] = {"input_shape": shape}
        if built:
            own = set(model._nodes)
            shape = [None] + [int(d) for d in next(n for n in layer._inbound if n in own).outputs[0]._ps]
        entries.append(e)
    cfg = _obj("keras", "Sequential", dict(name=model.name, trainable=bool(model.trainable), dtype=dict(_DTYPE),
                                           layers=entries))
    if built:
        cfg["config"]["build_input_shape"] = in_shape
        cfg["build_config"] = {"input_shape": in_shape}
    if model.optimizer is not None:
        cfg["compile_config"] = compile_config(model)
    return cfg


def _optimizer_config(opt):
    cfg = {"name": type(opt).__name__.lower()}
    cfg.update(opt.get_config())
    sched = getattr(opt, "_schedule", None)
    if isinstance(sched, schedules.LearningRateSchedule):
        cfg["learning_rate"] = schedules.serialize(sched)
    return _obj("keras.optimizers", type(opt).__name__, cfg)


def _loss_config(loss):
    cfg = dict(loss.get_config())
    if cfg == {"from_logits": False} or not cfg:
        return loss.name          # Keras's own name, e.g. "sparse_categorical_crossentropy"
    cfg.setdefault("name", loss.name)
    cfg.setdefault("reduction", "sum_over_batch_size")
    if isinstance(loss, (losses.BinaryCrossentropy, losses.CategoricalCrossentropy)):
        cfg.setdefault("axis", -1)           # Keras's cross-entropies write their (last) axis
    if isinstance(loss, losses.SparseCategoricalCrossentropy):
        cfg.setdefault("ignore_class", None)
    return _obj("keras.losses", type(loss).__name__, cfg)


def _metric_config(m):
    if isinstance(m, str):
        return m
    if not isinstance(m, dict):
        m = metrics.serialize(metrics.get(m)[0])
    return _obj("keras.metrics", m["class_name"], {**m["config"], "dtype": m["config"].get("dtype") or "float32"})


def _metrics_config(given):
    """compile()'s metrics as given: names stay names, objects in Keras's
    layout; with several outputs the structure given (a dict by output name,
    a list per output) is kept, as Keras keeps it."""
    if not given:
        return None
    if isinstance(given, dict):
        return {k: _metrics_config(v if isinstance(v, (list, tuple)) else [v]) for k, v in given.items()}
    if isinstance(given, (list, tuple)):
        return [_metrics_config(m) if isinstance(m, (list, tuple)) else _metric_config(m) for m in given]
    return [_metric_config(given)]


def _structure(v, fn):
    if isinstance(v, dict):
        return {k: _structure(x, fn) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_structure(x, fn) for x in v]
    return fn(v)


def compile_config(model):
    """Keras's compile_config; with several outputs, loss and loss_weights in
    the structure compile() was given (a dict by output name, or a list)."""
    lw = getattr(model, "_loss_weights", None) if getattr(model, "_multi_loss", False) else None
    loss, lws = _loss_config(model.loss), [lw[0]] if lw else None
    given = getattr(model, "_compile_given", None)
    if given is not None and isinstance(given[0], str):
        loss = given[0]   # a name stays the name given, as Keras writes it
    elif model._n_outputs > 1 and given is not None:
        loss = _structure(given[0], lambda l: l if isinstance(l, str) else _loss_config(losses.get(l)))
    if model._n_outputs > 1 and given is not None:
        lws = None if given[1] is None else _structure(given[1], float)
    return dict(optimizer=_optimizer_config(model.optimizer), loss=loss, loss_weights=lws,
                metrics=_metrics_config(getattr(model, "_metrics_arg", None)),
                weighted_metrics=_metrics_config(getattr(model, "_weighted_metrics_arg", None)),
                run_eagerly=False, steps_per_execution=1, jit_compile=False)


# ---- layers: Keras -> boundfit ----

# config keys boundfit does not model, and the values under which ignoring them changes nothing
_IGNORABLE = {
    "trainable": {True}, "dtype": None, "sparse": {False}, "ragged": {False}, "optional": {False},
    "data_format": {"channels_last", None}, "dilation_rate": {(1, 1), 1}, "groups": {1},
    "kernel_regularizer": {None}, "bias_regularizer": {None}, "activity_regularizer": {None},
    "beta_regularizer": {None}, "gamma_regularizer": {None}, "kernel_constraint": {None}, "bias_constraint": {None},
    "beta_constraint": {None}, "gamma_constraint": {None}, "quantization_config": {None}, "lora_rank": {None},
    "lora_alpha": None, "synchronized": {False}, "renorm": {False}, "renorm_clipping": {None},
    "renorm_momentum": None, "keepdims": {False}, "noise_shape": {None},
}

_FROM_KERAS = {c.__name__: c for c in (L.Dense, L.Conv2D, L.MaxPooling2D, L.AveragePooling2D, L.GlobalAveragePooling2D,
                                       L.Flatten, L.Reshape, L.Dropout, L.BatchNormalization, L.Activation,
                                       L.ReLU, L.LeakyReLU, L.ELU, L.Softmax, L.Permute, L.RepeatVector,
                                       L.ZeroPadding2D, L.UpSampling2D, L.Rescaling, L.Normalization, L.RandomFlip,
                                       L.RandomCrop, L.RandomTranslation,
                                       L.Add, L.Subtract, L.Multiply, L.Average, L.Maximum, L.Minimum, L.Concatenate)}
_FROM_KERAS.update({c.__name__: c for c in (L.Conv1D, L.Conv2DTranspose, L.MaxPooling1D, L.AveragePooling1D,
                                            L.GlobalAveragePooling1D, L.GlobalMaxPooling1D, L.GlobalMaxPooling2D)})
# sequence layers (recurrent.py): Keras keys they do not model, at values that change nothing
_FROM_KERAS.update({c.__name__: c for c in (L.Embedding, L.SimpleRNN, L.LSTM, L.GRU, L.Bidirectional)})
_IGNORABLE.update({"embeddings_regularizer": {None}, "embeddings_constraint": {None}, "recurrent_regularizer": {None},
                   "recurrent_constraint": {None}, "input_length": None, "implementation": None,
                   "time_major": {False}, "zero_output_for_mask": {False}})


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def _activation_name(v, where):
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, dict) and v.get("module", "").startswith("keras") and isinstance(v.get("config"), str):
        return v["config"]
    raise ValueError(f"{where}: activation {v!r} is not one boundfit has")


def layer_from_config(entry, custom_objects=None):
    """A boundfit layer from a Keras 3 layer entry; a clear error for anything boundfit lacks."""
    cls_name = entry.get("class_name")
    cfg = dict(entry.get("config") or {})
    name = cfg.get("name", "?")
    cls = (custom_objects or {}).get(cls_name) or _FROM_KERAS.get(cls_name)
    if cls is None:
        raise ValueError(f"layer {name!r}: boundfit has no {cls_name} layer (it has "
                         f"{', '.join(sorted(_FROM_KERAS))} and InputLayer)")
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    kwargs = {"name": name}
    for k, v in cfg.items():
        if k == "name":
            continue
        if k in accepted and not (k == "data_format" and v == "channels_last"):
            if k == "activation":
                v = _activation_name(v, f"layer {name!r} ({cls_name})")
            kwargs[k] = tuple(v) if isinstance(v, list) else v
            continue
        if k in _IGNORABLE:
            ok = _IGNORABLE[k]
            if ok is None or _hashable(v) in ok:
                continue
        if k == "axis" and cls is L.BatchNormalization and v in (-1, [-1]):
            continue
        if k == "trainable" and isinstance(v, bool):
            continue  # set on the layer below
        raise ValueError(f"layer {name!r} ({cls_name}): {k}={v!r} is not supported by boundfit")
    if cls is L.Bidirectional:  # its sublayers' configs become layers first
        for k in ("layer", "backward_layer"):
            if isinstance(kwargs.get(k), dict):
                sub = dict(kwargs[k])
                c = dict(sub.get("config") or {})
                if c.get("zero_output_for_mask") is not None:
                    c.pop("zero_output_for_mask")  # Bidirectional sets it (as Keras does)
                sub["config"] = c
                kwargs[k] = layer_from_config(sub, custom_objects)
    try:
        layer = cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise ValueError(f"layer {name!r} ({cls_name}): {e}") from None
    layer.trainable = bool(cfg.get("trainable", True))
    return layer


def sequential_from_config(cfg, custom_objects=None):
    """A boundfit Sequential from Keras 3's model config (config.json); nested
    Sequential / Functional models in it are built as such."""
    from .keras_graph import layer_or_model
    from .models import Sequential
    if cfg.get("class_name") != "Sequential":
        raise ValueError(f"boundfit reads Sequential models from .keras files; this one is a {cfg.get('class_name')}")
    entries = cfg["config"]["layers"]
    input_shape = None
    built = []
    for e in entries:
        if e.get("class_name") == "InputLayer":
            c = e["config"]
            shape = c.get("batch_shape") or c.get("batch_input_shape")
            input_shape = tuple(shape[1:])
            continue
        built.append(layer_or_model(e, custom_objects))
    if input_shape is None:
        shape = (cfg.get("build_config") or {}).get("input_shape") or cfg["config"].get("build_input_shape")
        if shape is None and entries:
            shape = (entries[0].get("build_config") or {}).get("input_shape")
        input_shape = tuple(shape[1:]) if shape is not None else None
    first = [L.InputLayer(shape=input_shape)] if input_shape is not None else []
    model = Sequential(first + built, name=cfg["config"].get("name"))
    if cfg["config"].get("trainable") is False:
        model.trainable = False
    return model


# ---- compile config: Keras -> boundfit ----

def _call_with_known(cls, cfg, what):
    params = inspect.signature(cls.__init__).parameters
    known = {k: v for k, v in cfg.items() if k in params}
    return cls(**known)


def optimizer_from_config(c):
    if isinstance(c, str):
        return optimizers.get(c)
    cls = getattr(optimizers, c.get("class_name", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, optimizers.Optimizer)):
        raise ValueError(f"optimizer {c.get('class_name')!r} is not one boundfit has")
    cfg = dict(c.get("config") or {})
    lr = cfg.get("learning_rate")
    if isinstance(lr, dict):
        cfg["learning_rate"] = schedules.deserialize(lr)
    return _call_with_known(cls, cfg, "optimizer")


def loss_from_config(c):
    if isinstance(c, str) or c is None:
        return losses.get(c)
    cls = getattr(losses, c.get("class_name", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, losses.Loss)):
        raise ValueError(f"loss {c.get('class_name')!r} is not one boundfit has")
    return _call_with_known(cls, dict(c.get("config") or {}), "loss")


def compile_from_config(model, cc):
    """model.compile from Keras's compile_config; warns and leaves the model
    uncompiled (as Keras does) when something in it is not one boundfit has."""
    def is_obj(v):
        return isinstance(v, dict) and "class_name" in v

    def metric(m):
        return m if isinstance(m, str) else {"class_name": m.get("class_name"), "config": m.get("config") or {}}

    def given(key):
        v = cc.get(key)
        if isinstance(v, dict) and not is_obj(v):
            return {k: [metric(m) for m in (ms if isinstance(ms, list) else [ms])] for k, ms in v.items()} or None
        out = [[metric(x) for x in m] if isinstance(m, list) else metric(m) for m in v or []]
        return out or None

    def loss(v):
        if isinstance(v, dict) and not is_obj(v):
            return {k: loss_from_config(x) for k, x in v.items()}
        if isinstance(v, list):
            return [loss_from_config(x) for x in v]
        return loss_from_config(v)
    try:
        lw = cc.get("loss_weights")
        if model._n_outputs == 1:
            if isinstance(lw, (list, tuple)) and len(lw) == 1:
                lw = lw[0]
            if isinstance(lw, dict) and len(lw) == 1:
                lw = next(iter(lw.values()))
            lw = None if lw is None else float(lw)
        model.compile(optimizer=optimizer_from_config(cc["optimizer"]), loss=loss(cc.get("loss")),
                      metrics=given("metrics"), weighted_metrics=given("weighted_metrics"), loss_weights=lw)
        return True
    except (ValueError, TypeError, KeyError) as e:
        warnings.warn(f"the model was loaded uncompiled: its compile config could not be used ({e})", stacklevel=3)
        return False


# ---- LayerNormalization, MultiHeadAttention (attention.py) ----

def _layernorm(l):
    return dict(axis=-1, epsilon=l.epsilon, center=l.center, scale=l.scale, rms_scaling=False,
                beta_initializer=initializers.serialize(l.beta_initializer),
                gamma_initializer=initializers.serialize(l.gamma_initializer),
                beta_regularizer=regularizers.serialize(l.beta_regularizer),
                gamma_regularizer=regularizers.serialize(l.gamma_regularizer),
                beta_constraint=constraints.serialize(l.beta_constraint),
                gamma_constraint=constraints.serialize(l.gamma_constraint))


def _mha(l):
    return dict(num_heads=l.num_heads, key_dim=l.key_dim, value_dim=l.value_dim, dropout=l.dropout,
                use_bias=l.use_bias, use_gate=False,
                output_shape=None if l.output_shape_arg is None else [l.output_shape_arg],
                attention_axes=[1] if l._dims is not None else None, sliding_window=None,
                kernel_initializer=initializers.serialize(l.kernel_initializer),
                bias_initializer=initializers.serialize(l.bias_initializer), kernel_regularizer=None,
                bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                seed=l.seed)


_TO_KERAS.update({L.LayerNormalization: _layernorm, L.MultiHeadAttention: _mha})
_FROM_KERAS.update({"LayerNormalization": L.LayerNormalization, "MultiHeadAttention": L.MultiHeadAttention})
