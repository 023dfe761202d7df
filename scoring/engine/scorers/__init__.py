"""Built-in scorers; importing this package registers them."""

from . import code_analysis, composite, file_match, judges, numerical

__all__ = ["code_analysis", "composite", "file_match", "judges", "numerical"]
