"""The one loader for YAML that someone else wrote (task files, proposals, evidence).

`yaml.safe_load` is safe from code execution but not from size: a few hundred bytes of nested
aliases (`&a [*b, *b, …]`) expand into gigabytes once the result is walked, dumped or printed.
Official task files do use anchors (`config: &id001 …` reused as `config: *id001`, as PyYAML's
dumper writes a repeated mapping), so anchors and aliases load, but only while the expansion is
bounded: the aliases may add at most ALIAS_EXTRA_NODES nodes and ALIAS_EXTRA_CHARS characters of
scalars to what the text spells out, and an alias inside its own anchor (a cycle) is refused.
Without aliases the parsed data is bounded by the size of the text.

Depth and size are capped too, whatever the aliases: PyYAML composes a document by recursion, one
level of Python calls per level of nesting, so a few kilobytes of `[[[[…` reach Python's recursion
limit (a RecursionError, not a YAMLError, which callers answered with a 500); and a large file of
tiny nodes costs memory far beyond its size. A collection nested deeper than MAX_DEPTH, or a
document of more than MAX_NODES nodes, is refused with where it happened.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["ALIAS_EXTRA_CHARS", "ALIAS_EXTRA_NODES", "MAX_DEPTH", "MAX_NODES", "YAMLAliasRefused", "YAMLRefused",
           "YAMLTooDeep", "YAMLTooLarge", "untrusted_yaml_load"]

ALIAS_EXTRA_NODES = 10_000
ALIAS_EXTRA_CHARS = 1_000_000
# Task files nest a handful of levels and hold a few hundred nodes; these leave room for any honest one.
MAX_DEPTH = 100
MAX_NODES = 1_000_000


class YAMLRefused(yaml.YAMLError):
    """A document this loader will not read, with the reason. A YAMLError, so callers that already
    handle bad YAML refuse it the same way."""


class YAMLAliasRefused(YAMLRefused):
    """The document's aliases expand beyond the bounds (or form a cycle)."""


class YAMLTooDeep(YAMLRefused):
    """A collection is nested deeper than MAX_DEPTH."""


class YAMLTooLarge(YAMLRefused):
    """The document has more than MAX_NODES nodes."""


class _Cycle(Exception):
    pass


class _Expansion:
    """Nodes and scalar characters of a composed document, once with every alias written out.

    Aliases make the composed graph share nodes; each node is measured once (memoised), so this
    costs time in the size of the text however large the expansion. Counts saturate at 2**62 so
    that a bomb's numbers stay machine-sized.
    """

    def __init__(self) -> None:
        self.sizes: dict[int, tuple[int, int]] = {}
        self.open: set[int] = set()
        self.distinct_nodes = 0
        self.distinct_chars = 0

    def measure(self, node: Node) -> tuple[int, int]:
        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if key in self.open:
            raise _Cycle
        self.open.add(key)
        nodes, chars = 1, 0
        children: list[Node]
        if isinstance(node, ScalarNode):
            chars = len(node.value)
            children = []
        elif isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            children = []
        for child in children:
            child_nodes, child_chars = self.measure(child)
            nodes = min(nodes + child_nodes, _CAP_NODES)
            chars = min(chars + child_chars, _CAP_CHARS)
        self.open.discard(key)
        self.sizes[key] = (nodes, chars)
        self.distinct_nodes += 1
        self.distinct_chars += len(node.value) if isinstance(node, ScalarNode) else 0
        return nodes, chars


# Far beyond any document the limits let through, so saturating never changes a verdict.
_CAP_NODES = _CAP_CHARS = 1 << 62


def _where(mark: Any) -> str:
    return f"at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "in the document"


class _BoundedAliasLoader(yaml.SafeLoader):
    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self.aliases: list[tuple[yaml.AliasEvent, Node]] = []
        self.depth = 0
        self.nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise YAMLTooLarge(f"YAML documents of more than {MAX_NODES} nodes are refused ({_where(event.start_mark)})"
                               ": split the data into a file the task reads itself.")
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            if node is not None:
                self.aliases.append((event, node))
            return node
        # Checked before descending: the composer recurses once per level, and Python's own limit
        # (a RecursionError, which no caller expects) is only some hundreds of levels further.
        if self.depth >= MAX_DEPTH:
            raise YAMLTooDeep(f"YAML nested deeper than {MAX_DEPTH} levels is refused ({_where(event.start_mark)})"
                              ": flatten the structure.")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _refusal(why: str, label: str, event: yaml.AliasEvent) -> YAMLAliasRefused:
    mark = event.start_mark
    where = f" {_where(mark)}" if mark is not None else ""
    return YAMLAliasRefused(f"YAML anchors and aliases (&name / *name) are refused {why} ({label}*{event.anchor}"
                            f"{where}): write the values out in full.")


def _check_expansion(loader: _BoundedAliasLoader, root: Node) -> None:
    expansion = _Expansion()
    try:
        nodes, chars = expansion.measure(root)
    except _Cycle:
        cyclic = next(event for event, node in loader.aliases if id(node) in expansion.open)
        raise _refusal("when an alias refers to its own anchor, a cycle", "", cyclic) from None
    if nodes - expansion.distinct_nodes > ALIAS_EXTRA_NODES or chars - expansion.distinct_chars > ALIAS_EXTRA_CHARS:
        largest = max(loader.aliases, key=lambda alias: expansion.sizes[id(alias[1])])[0]
        raise _refusal(f"when they expand the document by more than {ALIAS_EXTRA_NODES} nodes or "
                       f"{ALIAS_EXTRA_CHARS} characters", "the largest: ", largest)


def _unshared(data: Any) -> Any:
    """A copy in which every alias is its own object: editing one use never changes another."""
    if isinstance(data, dict):
        return {key: _unshared(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_unshared(item) for item in data]
    return data


def untrusted_yaml_load(text: str | bytes) -> Any:
    """`yaml.safe_load`, raising a YAMLRefused when the document is nested too deep, has too many
    nodes, or its aliases expand beyond the module's bounds.

    What it returns is a tree (no object appears twice), so it dumps to JSON as it is.
    """
    loader = _BoundedAliasLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if loader.aliases:
            _check_expansion(loader, root)
            return _unshared(loader.construct_document(root))
        return loader.construct_document(root)
    finally:
        loader.dispose()
