"""keras.utils.Config: a dict whose entries are also attributes, that can be
frozen against changes and written as JSON."""

import copy
import json


class Config:
    """Config(learning_rate=0.1): config.learning_rate == config["learning_rate"]; freeze() refuses changes."""

    def __init__(self, **kwargs):
        object.__setattr__(self, "_config", kwargs)
        object.__setattr__(self, "_frozen", False)

    @property
    def frozen(self):
        return self._frozen

    def freeze(self):
        object.__setattr__(self, "_frozen", True)

    def unfreeze(self):
        object.__setattr__(self, "_frozen", False)

    def _check(self):
        if self._frozen:
            raise ValueError("Cannot mutate attribute(s) because the config is frozen.")

    def as_dict(self):
        return copy.copy(self._config)

    def to_json(self):
        return json.dumps(self._config)

    def keys(self):
        return self._config.keys()

    def values(self):
        return self._config.values()

    def items(self):
        return self._config.items()

    def get(self, key, default=None):
        return self._config.get(key, default)

    def pop(self, *args):
        self._check()
        return self._config.pop(*args)

    def update(self, *args, **kwargs):
        self._check()
        return self._config.update(*args, **kwargs)

    def __setattr__(self, name, value):
        self._check()
        self._config[name] = value

    def __getattr__(self, name):
        config = object.__getattribute__(self, "_config")
        if name in config:
            return config[name]
        raise AttributeError(f"Unknown attribute: '{name}'")

    def __delattr__(self, name):
        self._check()
        if name not in self._config:
            raise AttributeError(f"Unknown attribute: '{name}'")
        del self._config[name]

    def __setitem__(self, key, item):
        self._check()
        self._config[key] = item

    def __getitem__(self, key):
        return self._config[key]

    def __delitem__(self, key):
        self._check()
        del self._config[key]

    def __contains__(self, item):
        return item in self._config

    def __len__(self):
        return len(self._config)

    def __iter__(self):
        return iter(self._config)

    def __repr__(self):
        return f"<Config {self._config}>"
