"""Authoring tasks: the scaffold of `task create`, the `validate --pre-submit` checks and the
`difficulty-check` trial."""
