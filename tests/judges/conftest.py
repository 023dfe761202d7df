"""The judge fixture tasks in the catalog, for the modules of this directory."""

from tests.judges.support import agent_catalog, judged_catalog

__all__ = ["agent_catalog", "judged_catalog"]
