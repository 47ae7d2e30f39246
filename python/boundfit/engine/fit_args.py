"""fit's and evaluate's checks of the arguments Keras gives them meaning
for: class_weight as a table by class id, sample / class weights of a model
with several outputs, validation_freq."""

import numpy as np


def class_weight_table(class_weight):
    """Keras's class_weight dict as a float32 table by class id (others weigh 1)."""
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict) or not class_weight:
        raise ValueError(f"class_weight must be a non-empty dict {{class id: weight}}, got {class_weight!r}")
    keys = []
    for k, v in class_weight.items():
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"class_weight: keys must be non-negative class ids, got {k!r}")
        try:
            float(v)
        except (TypeError, ValueError):
            raise ValueError(f"class_weight[{k}] must be a number, got {v!r}") from None
        keys.append(int(k))
    table = np.ones(max(keys) + 1, dtype=np.float32)
    for k, v in class_weight.items():
        table[int(k)] = float(v)
    return table


def check_weights_for_outputs(model, sample_weight, class_weight, what="sample_weight"):
    """Several outputs: one sample_weight array weighs every output's loss and
    weighted metrics; per-output weights and class_weight are refused."""
    if model._n_outputs <= 1:
        return
    if class_weight is not None:
        raise ValueError(f"class_weight is only supported for models with a single output; this one has "
                         f"{model._n_outputs} outputs {model._output_names}. Pass sample_weight instead")
    if isinstance(sample_weight, (list, tuple, dict)):
        raise ValueError(f"{what}: per-output sample weights (a list or dict by output) are not implemented yet; "
                         "pass one array of per-sample weights, which weighs every output")


def check_class_weight_output(model, class_weight):
    """class_weight weighs a sample by its label: undefined for targets per position."""
    if class_weight is None or getattr(model, "_engine", None) is None:  # a subclassed model not traced yet
        return
    out = tuple(model._engine.output_shape)
    if len(out) >= 2:
        raise ValueError(f"class_weight: the model's output {out} is a sequence (one target per position); "
                         "class weights per sample are not defined for it. Pass sample_weight instead")


def check_validation_freq(freq):
    ok = (isinstance(freq, int) and not isinstance(freq, bool) and freq > 0) or (
        isinstance(freq, (list, tuple)) and all(isinstance(e, int) and not isinstance(e, bool) for e in freq))
    if not ok:
        raise ValueError(f"validation_freq must be a positive int or a list of epochs (1-based), got {freq!r}")


def should_validate(epoch, freq):
    """Keras: validate after epoch e (1-based) when e % freq == 0, or e is in the list."""
    return (epoch + 1) % freq == 0 if isinstance(freq, int) else (epoch + 1) in freq
