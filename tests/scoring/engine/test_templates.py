from __future__ import annotations

import pytest

from scoring.engine import TemplateError, TemplateKeyError, resolve_templates

PARAMS = {"n": 4, "d1": 3, "d2": 5, "grid_size": 16, "n_frames": 10, "dt": 0.5, "method": "rk4"}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{n+1}", 5),
        ("{d1*d2,2}", [15, 2]),
        ("{5,grid_size,grid_size}", [5, 16, 16]),
        (" {n_frames // 3} ", 3),
        ("{n_frames % 3}", 1),
        ("{-n + 10}", 6),
        ("{n / 8}", 0.5),
        ("{dt*2}", 1.0),
        ("{method}", "rk4"),
        ("{True}", True),
    ],
)
def test_templates_evaluate_restricted_arithmetic(template: str, expected: object) -> None:
    assert resolve_templates(template, PARAMS) == expected


def test_only_whole_brace_strings_are_templates() -> None:
    config = {"shape": "2,200", "note": "size {n}", "regex": r"\d+", "n": 7}
    assert resolve_templates(config, PARAMS) == config


def test_resolution_is_recursive_and_copies() -> None:
    config = {"sub_scorers": [{"config": {"shape": "{n,n}"}}], "items": ["{n+1}", 2]}
    resolved = resolve_templates(config, PARAMS)
    assert resolved == {"sub_scorers": [{"config": {"shape": [4, 4]}}], "items": [5, 2]}
    assert config["items"][0] == "{n+1}"


def test_unknown_name_is_a_key_error() -> None:
    with pytest.raises(KeyError) as info:
        resolve_templates("{missing*2}", PARAMS)
    assert isinstance(info.value, TemplateKeyError)
    assert "missing" in str(info.value)


@pytest.mark.parametrize(
    "template",
    ["{n**2}", "{__import__('os')}", "{n.real}", "{PARAMS[0]}", "{(lambda: 1)()}", "{'a'}", "{n if n else 1}", "{}"],
)
def test_forbidden_constructs_are_refused(template: str) -> None:
    with pytest.raises(TemplateError):
        resolve_templates(template, {**PARAMS, "PARAMS": [1]})


def test_division_by_zero_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="ZeroDivisionError"):
        resolve_templates("{n/0}", PARAMS)


def test_regex_quantifier_in_braces_is_evaluated_as_upstream_does() -> None:
    # Contract §2.6 pitfall, reproduced on purpose: '{2,3}' becomes a list.
    assert resolve_templates("{2,3}", {}) == [2, 3]
