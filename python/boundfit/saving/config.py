"""Keras 3 serialization of boundfit objects and back: layers from their
configs (each layer's own config is registered in its family's module, see
layers/layer.py keras_config) and compile_config (optimizer, loss, metrics).
Model configs, Sequential and Functional, are keras_graph.py. Configs written
here are what keras.saving.load_model deserializes; configs read here are
what Keras 3 writes, for every layer boundfit has."""

import inspect
import warnings

from .. import losses, metrics, optimizers
from ..layers.layer import keras_object, layer_config  # noqa: F401  (layer_config: saving's name for it)
from ..layers.recurrent import Bidirectional
from .. import object_registration
from .registry import keras_layers

_obj = keras_object


def _optimizer_config(opt):
    return optimizers.base.serialize(opt)


def _loss_config(loss):
    if isinstance(loss, losses.CustomLoss):
        return loss.keras_config()
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
    opt = getattr(model, "_given_optimizer", None) or model.optimizer   # as given to compile (Keras's)
    return dict(optimizer=_optimizer_config(opt), loss=loss, loss_weights=lws,
                metrics=_metrics_config(getattr(model, "_metrics_arg", None)),
                weighted_metrics=_metrics_config(getattr(model, "_weighted_metrics_arg", None)),
                run_eagerly=False, steps_per_execution=1, jit_compile=False)


# ---- layers: Keras -> boundfit ----

# config keys boundfit does not model, and the values under which ignoring them changes nothing
_IGNORABLE = {
    "trainable": {True}, "sparse": {False}, "ragged": {False}, "optional": {False},
    "data_format": {"channels_last", None}, "dilation_rate": {(1, 1), 1}, "groups": {1},
    "kernel_regularizer": {None}, "bias_regularizer": {None}, "activity_regularizer": {None},
    "beta_regularizer": {None}, "gamma_regularizer": {None}, "kernel_constraint": {None}, "bias_constraint": {None},
    "beta_constraint": {None}, "gamma_constraint": {None}, "quantization_config": {None}, "lora_rank": {None},
    "lora_alpha": None, "synchronized": {False}, "renorm": {False}, "renorm_clipping": {None},
    "renorm_momentum": None, "keepdims": {False}, "noise_shape": {None},
}

_IGNORABLE.update({"embeddings_regularizer": {None}, "embeddings_constraint": {None}, "recurrent_regularizer": {None},
                   "recurrent_constraint": {None}, "input_length": None, "implementation": None,
                   "time_major": {False}, "zero_output_for_mask": {False}})


def _ignorable(key, v):
    """A config key boundfit does not model, at a value under which ignoring it changes nothing."""
    ok = _IGNORABLE[key]
    return ok is None or any((tuple(v) if isinstance(v, list) else v) == o for o in ok)


def _activation_name(v, where, custom_objects):
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, dict) and str(v.get("module") or "").startswith("keras") and isinstance(v.get("config"), str):
        return v["config"]
    if isinstance(v, dict) and v.get("class_name") == "function" and isinstance(v.get("config"), str):
        fn = custom_objects.get(v["config"])   # a user's function, by its registered name (Keras's entry)
        if callable(fn):
            return fn
        raise ValueError(f"{where}: activation function {v['config']!r} is not registered; register it with "
                         "keras.saving.register_keras_serializable or pass it in custom_objects")
    raise ValueError(f"{where}: activation {v!r} is not one boundfit has")


def _custom_regularizer(cls, entry):
    cfg = dict(entry.get("config") or {})
    return cls.from_config(cfg) if hasattr(cls, "from_config") else cls(**cfg)


def _float_policy(v):
    """The float policy a layer config's dtype names (None: none, or a layer's own dtype such as Hashing's int64,
    which the class reads itself)."""
    inner = v.get("config") if isinstance(v, dict) else None
    name = inner.get("name") if isinstance(inner, dict) else (None if isinstance(v, dict) else v)
    return name if isinstance(name, str) and (name in ("mixed_float16", "mixed_bfloat16") or
                                              name.startswith(("float", "bfloat"))) else None


def layer_from_config(entry, custom_objects=None):
    """A boundfit layer from a Keras 3 layer entry; a clear error for anything boundfit lacks."""
    cls_name = entry.get("class_name")
    cfg = dict(entry.get("config") or {})
    name = cfg.get("name", "?")
    known, custom_objects = keras_layers(), object_registration.lookup(custom_objects)
    cls = custom_objects.get(entry.get("registered_name") or "") or custom_objects.get(cls_name) or known.get(cls_name)
    if cls is None:
        raise ValueError(f"layer {name!r}: boundfit has no {cls_name} layer (it has "
                         f"{', '.join(sorted(known))} and InputLayer)")
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    kwargs = {"name": name}
    for k, v in cfg.items():
        if k == "name":
            continue
        if k in accepted and not (k == "data_format" and v == "channels_last"):
            if k == "activation":
                v = _activation_name(v, f"layer {name!r} ({cls_name})", custom_objects)
            if k == "activity_regularizer" and isinstance(v, dict) and v.get("class_name") in (custom_objects or {}):
                v = _custom_regularizer(custom_objects[v["class_name"]], v)   # a Regularizer subclass of the user's
            kwargs[k] = tuple(v) if isinstance(v, list) else v
            continue
        if k in _IGNORABLE and _ignorable(k, v):
            continue
        if k == "dtype":
            continue  # the layer's policy, set on the layer below
        if k == "trainable" and isinstance(v, bool):
            continue  # set on the layer below
        raise ValueError(f"layer {name!r} ({cls_name}): {k}={v!r} is not supported by boundfit")
    if cls is Bidirectional:  # its sublayers' configs become layers first
        for k in ("layer", "backward_layer"):
            if isinstance(kwargs.get(k), dict):
                sub = dict(kwargs[k])
                c = dict(sub.get("config") or {})
                if c.get("zero_output_for_mask") is not None:
                    c.pop("zero_output_for_mask")  # Bidirectional sets it (as Keras does)
                sub["config"] = c
                kwargs[k] = layer_from_config(sub, custom_objects)
    for k in ("cell", "cells"):   # RNN's cell, StackedRNNCells' cells: layers first
        if k in kwargs and getattr(cls, "_config_cells", False):
            v = kwargs[k]
            kwargs[k] = [layer_from_config(c, custom_objects) for c in v] if isinstance(v, (list, tuple)) else \
                layer_from_config(v, custom_objects) if isinstance(v, dict) else v
    if getattr(cls, "_config_sublayer", False) and isinstance(kwargs.get("layer"), dict):   # TimeDistributed
        kwargs["layer"] = layer_from_config(kwargs["layer"], custom_objects)
    if getattr(cls, "_config_sublayers", False) and isinstance(kwargs.get("layers"), (list, tuple)):   # Pipeline
        kwargs["layers"] = [layer_from_config(sub, custom_objects) for sub in kwargs["layers"]]
    try:
        layer = cls._from_keras_config(kwargs) if hasattr(cls, "_from_keras_config") else cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise ValueError(f"layer {name!r} ({cls_name}): {e}") from None
    if layer.trainable != bool(cfg.get("trainable", True)):   # (a wrapper's setter would reach its inner layer)
        layer.trainable = bool(cfg.get("trainable", True))
    policy = _float_policy(cfg.get("dtype"))
    if policy is not None:
        layer.dtype_policy = policy
    return layer


# ---- compile config: Keras -> boundfit ----

def _call_with_known(cls, cfg, what):
    params = inspect.signature(cls.__init__).parameters
    known = {k: v for k, v in cfg.items() if k in params}
    return cls(**known)


def optimizer_from_config(c):
    if isinstance(c, str):
        return optimizers.get(c)
    return optimizers.deserialize(c)


def _custom_loss(c, custom_objects):
    """A loss function or Loss subclass saved by name: from custom_objects, as Keras; TypeError naming it if
    it is not there (the code of a custom loss is not in the file)."""
    fn = c.get("class_name") == "function"
    key = c.get("config") if fn else c.get("class_name")
    obj = (custom_objects or {}).get(key)
    if obj is None and fn:
        obj = losses.builtin_function(key)   # Keras's own loss functions (kl_divergence, ...), by name
    if obj is None:
        raise TypeError(f"Could not locate {'function' if fn else 'class'} {key!r}: the model was compiled with this "
                        f"custom loss, whose code a saved model does not hold. Pass custom_objects={{{key!r}: "
                        f"{key}}} to load_model, or load_model(..., compile=False) and compile again")
    if not fn and isinstance(obj, type):
        cfg = dict(c.get("config") or {})
        obj = obj.from_config(cfg) if hasattr(obj, "from_config") else obj(**cfg)
    return losses.get(obj)


def loss_from_config(c, custom_objects=None):
    custom_objects = object_registration.lookup(custom_objects)
    if isinstance(c, str) or c is None:
        return losses.get(c)
    if c.get("class_name") == "function" or (c.get("registered_name") and not hasattr(losses, c.get("class_name", ""))):
        return _custom_loss(c, custom_objects)
    cls = getattr(losses, c.get("class_name", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, losses.Loss)):
        raise ValueError(f"loss {c.get('class_name')!r} is not one boundfit has")
    return _call_with_known(cls, dict(c.get("config") or {}), "loss")


def compile_from_config(model, cc, custom_objects=None):
    custom_objects = object_registration.lookup(custom_objects)
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
            return {k: loss_from_config(x, custom_objects) for k, x in v.items()}
        if isinstance(v, list):
            return [loss_from_config(x, custom_objects) for x in v]
        return loss_from_config(v, custom_objects)

    def custom(v):   # a custom loss missing from custom_objects raises (as Keras), not a warning
        if isinstance(v, dict) and not is_obj(v):
            return any(custom(x) for x in v.values())
        if isinstance(v, list):
            return any(custom(x) for x in v)
        return is_obj(v) and ((v.get("class_name") == "function" and losses.builtin_function(v.get("config")) is None)
                              or (bool(v.get("registered_name")) and not hasattr(losses, v.get("class_name", ""))))
    if custom(cc.get("loss")):
        loss(cc.get("loss"))
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
