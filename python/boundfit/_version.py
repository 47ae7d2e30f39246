"""The package version (one place: __init__ and the Keras files' metadata read it)."""

__version__ = "0.1.0"
