"""The base of Keras's small configurable objects (initializers,
regularizers, constraints): two are equal when their class and get_config()
are, hash alike then, and print as `Class(key=value, ...)`."""


def _frozen(v):
    """A hashable form of a config value (lists, as Constant's array or an axis list, become tuples)."""
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(e) for e in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(e)) for k, e in v.items()))
    return v


class ConfigObject:
    """get_config() (the object's Keras config; none by default), from_config(), ==, hash() and repr() by it."""

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self):
        return hash((type(self).__name__, _frozen(self.get_config())))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"
