"""The untrusted-YAML loader: anchors and aliases load while their expansion is bounded (official
task files use them), and a bomb, a cycle or an oversized expansion is refused with its reason."""

import json
import re
import time

import pytest

from scoring.engine.safe_yaml import ALIAS_EXTRA_CHARS, ALIAS_EXTRA_NODES, YAMLAliasRefused, untrusted_yaml_load
from tests.hostile_yaml import alias_bomb

ANCHORED = """\
evaluation:
  gates:
  - scorer: tour_valid
    config: &id001
      pred_file: tour.csv
      limits: {cpu: 1.0, memory: 3g}
  scoring:
  - scorer: tour_length
    weight: 100
    config: *id001
"""


def test_it_loads_an_official_style_anchor_as_if_written_out_twice():
    data = untrusted_yaml_load(ANCHORED)
    gate, score = data["evaluation"]["gates"][0]["config"], data["evaluation"]["scoring"][0]["config"]
    assert gate == score == {"pred_file": "tour.csv", "limits": {"cpu": 1.0, "memory": "3g"}}
    # Each use is its own object: injecting a gate's weight never changes the score's config.
    gate["weight"] = 1.0
    gate["limits"]["cpu"] = 2.0
    assert score == {"pred_file": "tour.csv", "limits": {"cpu": 1.0, "memory": "3g"}}


def test_merge_keys_of_an_anchor_load():
    data = untrusted_yaml_load("base: &base {a: 1, b: 2}\nderived:\n  <<: *base\n  b: 3\n")
    assert data["derived"] == {"a": 1, "b": 3}


@pytest.mark.parametrize("depth", [5, 8, 40])
def test_a_bomb_is_refused_quickly_with_its_reason(depth):
    started = time.monotonic()
    with pytest.raises(YAMLAliasRefused) as refused:
        untrusted_yaml_load(alias_bomb(depth))
    assert time.monotonic() - started < 2  # measured on the composed graph, never expanded
    message = str(refused.value)
    assert message.startswith("YAML anchors and aliases (&name / *name) are refused when they expand the "
                              f"document by more than {ALIAS_EXTRA_NODES} nodes or {ALIAS_EXTRA_CHARS} characters")
    assert re.search(r"\(the largest: \*l\d+ at line \d+, column \d+\): write the values out in full\.$", message)
    if depth < 20:  # below saturation the largest is named exactly: `notes: *l<depth>`, the last line
        assert f"(the largest: *l{depth} at line {depth + 2}, column 8)" in message


def test_a_small_expansion_of_the_same_shape_loads():
    data = untrusted_yaml_load(alias_bomb(2))  # 2 x 9**2 strings once expanded: inside the bound
    assert len(json.dumps(data)) < 20_000 and data["notes"][0][0][0] == "lol"


def test_one_long_string_aliased_many_times_is_refused_by_its_characters():
    text = f"s: &s {'x' * 200_000}\nmany: [*s, *s, *s, *s, *s, *s]\n"
    with pytest.raises(YAMLAliasRefused, match="more than 10000 nodes or 1000000 characters"):
        untrusted_yaml_load(text)


@pytest.mark.parametrize("text", ["a: &a [1, *a]\n", "a: &a {self: *a}\n"])
def test_an_alias_inside_its_own_anchor_is_refused(text):
    with pytest.raises(YAMLAliasRefused, match=r"refers to its own anchor, a cycle \(\*a at line 1, column"):
        untrusted_yaml_load(text)


def test_a_large_document_without_aliases_is_not_counted():
    items = "\n".join(f"- {i}" for i in range(3 * ALIAS_EXTRA_NODES))
    assert len(untrusted_yaml_load(items)) == 3 * ALIAS_EXTRA_NODES


def test_an_empty_document_is_none():
    assert untrusted_yaml_load("") is None and untrusted_yaml_load("# only a comment\n") is None


@pytest.mark.parametrize("opening, closing", [("[", "]"), ("{a: ", "}")])
def test_deep_nesting_is_refused_with_where_not_a_recursion_error(opening, closing):
    from scoring.engine.safe_yaml import MAX_DEPTH, YAMLTooDeep
    from tests.hostile_yaml import deeply_nested

    assert untrusted_yaml_load("a: " + deeply_nested(MAX_DEPTH - 2, opening, closing)) is not None
    with pytest.raises(YAMLTooDeep) as refused:
        untrusted_yaml_load("a: " + deeply_nested(1500, opening, closing))
    assert str(refused.value).startswith(f"YAML nested deeper than {MAX_DEPTH} levels is refused (at line 1, column ")


def test_a_document_of_too_many_nodes_is_refused(monkeypatch):
    from scoring.engine import safe_yaml
    from scoring.engine.safe_yaml import YAMLTooLarge

    assert safe_yaml.MAX_NODES == 1_000_000
    # The cap is read when the loader counts, so a small one shows the same refusal without parsing a million
    # nodes in pure Python (a minute of the suite); the count at the cap itself still loads.
    monkeypatch.setattr(safe_yaml, "MAX_NODES", 2_000)
    assert len(untrusted_yaml_load("[" + ",".join(["1"] * 1_998) + "]")) == 1_998
    with pytest.raises(YAMLTooLarge) as refused:
        untrusted_yaml_load("[" + ",".join(["1"] * 2_001) + "]")
    assert str(refused.value).startswith("YAML documents of more than 2000 nodes are refused")


def test_catalog_load_and_generation_report_a_deep_task_file_as_a_problem(tmp_path):
    from scoring.generation import TaskProblem, _definition
    from tests.hostile_yaml import deeply_nested

    (tmp_path / "task_meta.yaml").write_text("id: x.y\nnotes: " + deeply_nested(1500) + "\n")
    with pytest.raises(TaskProblem) as problem:
        _definition(tmp_path)
    assert "task_meta.yaml is not valid YAML: YAML nested deeper than" in str(problem.value)
