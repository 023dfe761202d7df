"""The `asibench` command: our client for the ASI-Bench Portal (wire-compatible with asibench 0.2.0)."""

__version__ = "0.2.0"
