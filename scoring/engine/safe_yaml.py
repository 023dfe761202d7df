"""The one loader for YAML that someone else wrote (task files, proposals, evidence).

`yaml.safe_load` is safe from code execution but not from size: a few hundred bytes of nested
aliases (`&a [*b, *b, …]`) expand into gigabytes once the result is walked, dumped or printed.
Task files never need anchors, so they are refused outright: without aliases the parsed data
is bounded by the size of the text.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["YAMLAliasRefused", "untrusted_yaml_load"]


class YAMLAliasRefused(yaml.YAMLError):
    """The document uses an anchor or alias. A YAMLError, so callers that already handle bad YAML
    refuse it the same way."""


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            mark = event.start_mark
            raise YAMLAliasRefused(
                f"YAML anchors and aliases (&name / *name) are refused (line {mark.line + 1}, column "
                f"{mark.column + 1}): write the values out in full."
            )
        return super().compose_node(parent, index)


def untrusted_yaml_load(text: str | bytes) -> Any:
    """`yaml.safe_load` that raises YAMLAliasRefused on any anchor or alias."""
    loader = _NoAliasLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
