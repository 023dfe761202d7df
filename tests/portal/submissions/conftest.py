"""Fixtures of this directory's tests."""

from tests.scanners.portal_runs import corpus_catalog  # noqa: F401 (the labelled set's tasks as a catalog)
