"""Keras names boundfit defines only to refuse them: constructing (or calling) one raises NotImplementedError
saying why and what to use instead; tools/keras_coverage.py lists them as refused (`_boundfit_refused`)."""


def refused(qualname, why):
    """A class standing for Keras's `qualname` (e.g. "keras.callbacks.TensorBoard") that refuses to be made."""
    name = qualname.rsplit(".", 1)[-1]

    def init(self, *args, **kwargs):
        raise NotImplementedError(f"{qualname} is not supported by boundfit: {why}")
    return type(name, (), {"__init__": init, "__doc__": f"Refused: Keras's {name}; {why}.", "_boundfit_refused": True})


def refused_function(qualname, why):
    """A function standing for Keras's `qualname` that refuses to be called."""
    def f(*args, **kwargs):
        raise NotImplementedError(f"{qualname} is not supported by boundfit: {why}")
    f.__name__ = f.__qualname__ = qualname.rsplit(".", 1)[-1]
    f.__doc__ = f"Refused: Keras's {f.__name__}; {why}."
    f._boundfit_refused = True
    return f
