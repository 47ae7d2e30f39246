"""Helpers the tests share (import them as `from helpers.<module> import ...`;
tests/ is on sys.path, as for conftest and keras_ref)."""
