"""Running agents: `asibench run` over pulled instances (workspaces, sandboxes, the result files it
writes) and the local, non-official scoring of such a run."""
