"""Compatibility shim for ``asibench`` 0.2.0 custom scorers (scoring.engine.compat)."""

__version__ = "0.2.0"
