"""The `asibench` command: our client for the ASI-Bench Portal (wire-compatible with asibench 0.2.0)."""

__version__ = "0.2.0"
"""The official client version we are wire-compatible with; written as `framework_version`, which the
dataset policies check."""
CLIENT_NAME = "asibench-portal-cli"
CLIENT_VERSION = "0.1.0"
"""This client's own name and version (pyproject's [project] version), recorded in each result's
`provenance.client` (contracts.client_identity) so reviewers can tell our runs from the official client's."""
