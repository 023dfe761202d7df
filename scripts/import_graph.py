#!/usr/bin/env python3
"""Print the import graph of the Portal's own packages, and its cycles.

Run from the repository root: `python scripts/import_graph.py` (no dependencies, no Django).

Each import found by parsing the source is one edge, classified by where it sits:
- "top": at module level (what Python runs on import),
- "lazy": inside a function or method (often there only to dodge a cycle),
- "typing": under `if TYPE_CHECKING:` (never runs).
Package-level edges group modules by top-level package; module-level cycles are the
strongly connected components of the top+lazy graph, then of the top-only graph.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("config", "portal", "catalog", "scoring", "leaderboard", "proposals", "cli_client", "contracts")
RANK = {"top": 0, "lazy": 1, "typing": 2}
# Code that must run without Django: in the scoring sandbox, in the CLI, or as plain functions the
# web tier calls. A module here may import only other pure modules and no web framework
# (tests/test_import_rules.py holds it). Each name is a module or a whole package.
PURE_CORES = (
    "contracts", "cli_client", "scoring.engine", "scoring.sandbox", "scoring.judging",
    "scoring.aggregation", "scoring.runtime_requirements", "leaderboard.stats", "portal.guides.faq",
    "portal.submissions.bundle_verify", "portal.submissions.evidence", "portal.submissions.long_texts",
    "portal.submissions.usage", "portal.submissions.prices", "portal.submissions.scanners",
)
WEB_FRAMEWORKS = frozenset({"django", "rest_framework", "celery", "kombu", "allauth", "drf_spectacular", "storages",
                            "whitenoise", "gunicorn", "dj_database_url"})
# The server side: none of it may import the client package.
SERVER_PACKAGES = ("config", "portal", "catalog", "scoring", "leaderboard", "proposals")


def is_pure(module: str) -> bool:
    return any(module == core or module.startswith(core + ".") for core in PURE_CORES)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def iter_sources(root: Path) -> list[Path]:
    files = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            files.append(path)
    return files


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(current: str, is_package: bool, node: ast.ImportFrom, modules: set[str]) -> list[str]:
    """Modules an ImportFrom loads: each imported submodule, else the module named after `from`."""
    if node.level:
        base = current.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    submodules = [f"{prefix}.{alias.name}" for alias in node.names if f"{prefix}.{alias.name}" in modules]
    return submodules if len(submodules) == len(node.names) else [prefix, *submodules]


def _module_edges(tree: ast.AST, current: str, is_package: bool, modules: set[str]) -> dict[str, str]:
    """{imported module: kind} for one parsed module; kind is the strongest seen (top < lazy < typing)."""
    found: dict[str, str] = {}

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit_stmt(stmt, "typing")
                for stmt in child.orelse:
                    visit_stmt(stmt, kind)
                continue
            visit_stmt(child, kind)

    def visit_stmt(node: ast.AST, kind: str) -> None:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = _resolve(current, is_package, node, modules)
        for target in targets:
            # Keep the longest known module the name refers to ("a.b.func" -> "a.b").
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # A module always loads its parent packages first: not an edge worth drawing.
            if target and target != current and not current.startswith(target + "."):
                if target not in found or RANK[kind] < RANK[found[target]]:
                    found[target] = kind
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and kind == "top":
            kind = "lazy"
        visit(node, kind)

    visit(tree, "top")
    return found


def external_imports(root: Path) -> dict[str, set[str]]:
    """{module: top-level names of what it imports from outside the project}, at run time (not
    under TYPE_CHECKING)."""
    out: dict[str, set[str]] = {}
    for path in iter_sources(root):
        found: set[str] = set()
        stack: list[ast.AST] = [ast.parse(path.read_text(), filename=str(path))]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                stack.extend(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
            stack.extend(ast.iter_child_nodes(node))
        out[module_name(root, path)] = found - set(PACKAGES)
    return out


def collect_edges(root: Path) -> tuple[set[str], dict[tuple[str, str], str]]:
    """Return the known modules and {(importer, imported): kind}."""
    sources = iter_sources(root)
    modules = {module_name(root, path) for path in sources}
    edges: dict[tuple[str, str], str] = {}
    for path in sources:
        current = module_name(root, path)
        tree = ast.parse(path.read_text(), filename=str(path))
        for target, kind in _module_edges(tree, current, path.name == "__init__.py", modules).items():
            edges[(current, target)] = kind
    return modules, edges


def strongly_connected(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Tarjan's algorithm; returns only components with more than one member."""
    graph: dict[str, list[str]] = defaultdict(list)
    for source, target in sorted(edges):
        graph[source].append(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = 0

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def connect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            connect(node)
    return sorted(result)


# The code map's "may import" column (docs/architecture.md, table "Packages") is the rule: each row names a
# room (a package or a sub-package), and the backticked names in its last column are what the room's modules
# may import from other rooms (a module or a package prefix; `*`: anything). A module belongs to the room of
# the longest row that contains it.
MAP_DOC = Path("docs") / "architecture.md"
_MAP_HEADER = "| package | what it holds | may import"


def map_allowed_imports(doc_text: str) -> dict[str, tuple[str, ...]]:
    """{room: allowed module prefixes} read from the map's Packages table."""
    lines = doc_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(_MAP_HEADER))
    allowed: dict[str, tuple[str, ...]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        room = cells[0].strip("`").strip("/").replace("/", ".")
        allowed[room] = tuple(re.findall(r"`([A-Za-z_][\w.]*|\*)`", cells[-1]))
    return allowed


def room_of(module: str, rooms: Iterable[str]) -> str | None:
    matches = [room for room in rooms if module == room or module.startswith(room + ".")]
    return max(matches, key=len) if matches else None


def edges_the_map_forbids(edges: Iterable[tuple[str, str]],
                          allowed: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """Every edge from one room into another that the importing room's row does not allow, and every edge
    from a module that no row places."""
    bad = []
    for source, target in sorted(edges):
        source_room, target_room = room_of(source, allowed), room_of(target, allowed)
        if source_room is None:
            bad.append((source, target))
            continue
        if source_room == target_room or "*" in allowed[source_room]:
            continue
        if not any(target == prefix or target.startswith(prefix + ".") for prefix in allowed[source_room]):
            bad.append((source, target))
    return bad


def package_of(module: str) -> str:
    return module.split(".")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--modules", action="store_true", help="also list every module-level edge")
    args = parser.parse_args(argv)

    modules, edges = collect_edges(args.root)
    runtime = {edge for edge, kind in edges.items() if kind != "typing"}
    top_only = {edge for edge, kind in edges.items() if kind == "top"}

    print("== package edges (importer -> imported: top/lazy/typing import counts)")
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (source, target), kind in edges.items():
        if package_of(source) != package_of(target):
            counts[(package_of(source), package_of(target))][kind] += 1
    for (source, target), by_kind in sorted(counts.items()):
        detail = " ".join(f"{k}={by_kind[k]}" for k in ("top", "lazy", "typing") if by_kind.get(k))
        print(f"{source} -> {target}: {detail}")
    package_edges = {(package_of(s), package_of(t)) for s, t in runtime if package_of(s) != package_of(t)}
    package_cycles = strongly_connected({package_of(m) for m in modules}, package_edges)
    print("package cycles:", "; ".join(" <-> ".join(c) for c in package_cycles) or "none")

    print("\n== lazy (in-function) imports of our own modules")
    lazy = sorted(edge for edge, kind in edges.items() if kind == "lazy")
    for source, target in lazy:
        print(f"{source} -> {target}")
    print(f"total: {len(lazy)}")

    print("\n== module cycles counting lazy imports")
    for component in strongly_connected(modules, runtime):
        print("  " + " <-> ".join(component))
    print("\n== module cycles among top-level imports only")
    for component in strongly_connected(modules, top_only):
        print("  " + " <-> ".join(component))

    if args.modules:
        print("\n== module edges")
        for (source, target), kind in sorted(edges.items()):
            print(f"{source} -> {target} [{kind}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
