"""The layering rules of docs/architecture.md, checked on the source (scripts/import_graph.py), the map's
"may import" column included."""

import ast
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_graph_script():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "scripts" / "import_graph.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


graph = _load_graph_script()
MODULES, EDGES = graph.collect_edges(REPO)
RUNTIME_EDGES = {edge for edge, kind in EDGES.items() if kind != "typing"}


def test_no_package_imports_another_that_imports_it_back():
    packages = {graph.package_of(m) for m in MODULES}
    edges = {(graph.package_of(s), graph.package_of(t)) for s, t in RUNTIME_EDGES
             if graph.package_of(s) != graph.package_of(t)}
    assert graph.strongly_connected(packages, edges) == []


def test_no_module_cycle_even_through_imports_inside_functions():
    assert graph.strongly_connected(MODULES, RUNTIME_EDGES) == []


def test_pure_cores_import_no_web_framework_and_only_other_pure_modules():
    external = graph.external_imports(REPO)
    pure = sorted(m for m in MODULES if graph.is_pure(m))
    assert "contracts.bundle" in pure and "scoring.engine.cli" in pure and "cli_client.main" in pure
    problems = [f"{m} imports {sorted(external[m] & graph.WEB_FRAMEWORKS)}" for m in pure
                if external[m] & graph.WEB_FRAMEWORKS]
    problems += [f"{source} imports {target}, which is not pure" for source, target in sorted(RUNTIME_EDGES)
                 if graph.is_pure(source) and not graph.is_pure(target)]
    assert problems == []


def test_the_server_never_imports_the_client():
    assert sorted((s, t) for s, t in RUNTIME_EDGES
                  if graph.package_of(s) in graph.SERVER_PACKAGES and graph.package_of(t) == "cli_client") == []


def test_the_contracts_import_nothing_of_the_project_but_themselves():
    assert sorted((s, t) for s, t in RUNTIME_EDGES
                  if graph.package_of(s) == "contracts" and graph.package_of(t) != "contracts") == []


def _assignments(name: str) -> list[str]:
    found = []
    for path in graph.iter_sources(REPO):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found.append(graph.module_name(REPO, path))
    return found


@pytest.mark.parametrize("name", ["PROMPT_LEVELS", "GATED_LEVELS", "AGENT_SANDBOXES", "DIFFICULTY_THRESHOLD"])
def test_each_shared_definition_has_one_home(name):
    assert len(_assignments(name)) == 1, _assignments(name)


MAP = graph.map_allowed_imports((REPO / graph.MAP_DOC).read_text(encoding="utf-8"))


def test_the_map_places_every_package():
    assert set(graph.PACKAGES) <= set(MAP), sorted(set(graph.PACKAGES) - set(MAP))
    assert MAP["contracts"] == () and MAP["config"] == ("*",)


def test_every_import_between_rooms_is_one_the_map_allows():
    assert graph.edges_the_map_forbids(RUNTIME_EDGES, MAP) == []


def test_the_map_check_sees_an_edge_it_does_not_allow():
    # A catalog module importing the client, and the engine importing Django's side of scoring: both refused;
    # an allowed edge and an edge inside one room pass.
    wrong = {("catalog.selectors", "cli_client.main"), ("scoring.engine.cli", "scoring.models")}
    fine = {("catalog.selectors", "scoring.selectors"), ("scoring.engine.cli", "scoring.engine.taskdef"),
            ("portal.submissions.scanners.readers", "portal.submissions.evidence")}
    assert graph.edges_the_map_forbids(wrong | fine, MAP) == sorted(wrong)


def test_the_checks_see_a_violation(tmp_path):
    # The rules above must be able to fail: a copy of the tree with one forbidden import is caught.
    for package in graph.PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "contracts" / "bad.py").write_text("import django\nfrom portal import thing\n")
    (tmp_path / "portal" / "thing.py").write_text("from contracts import bad\n")
    modules, edges = graph.collect_edges(tmp_path)
    assert ("contracts.bad", "portal.thing") in edges and ("portal.thing", "contracts.bad") in edges
    assert graph.strongly_connected(modules, set(edges)) == [["contracts.bad", "portal.thing"]]
    assert "django" in graph.external_imports(tmp_path)["contracts.bad"]
