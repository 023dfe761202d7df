"""The judge fixture task in the catalog, for the modules of this directory."""

from tests.judges.support import judged_catalog

__all__ = ["judged_catalog"]
