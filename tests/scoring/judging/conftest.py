"""The engine tests' task builder and prediction/reference dirs, for the judge tests."""

from tests.scoring.engine.conftest import dirs, make_task

__all__ = ["dirs", "make_task"]
