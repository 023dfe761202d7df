"""The file and wire contracts the client and the Portal share.

The bundle manifest and result files, instance ids, task-proposal file rules, the B3/B4
difficulty policy, agent labels, content digests and the gzip inflater. Pure Python: no
Django, no network, nothing from `portal`, `scoring` or `cli_client`, so the CLI, the web
tier and the scoring sandbox import the same definitions (the import-rules test holds it).
"""

PROMPT_LEVELS: tuple[str, ...] = ("b1", "b2", "b3", "b4")
"""The four prompt levels, from B1 (full method) to B4 (almost nothing)."""
