from __future__ import annotations

import re
from pathlib import Path

import pytest

from scoring.engine.scorers.code_analysis import CodeAnalysisScorer, strip_comments_and_docstrings

SOURCE = '''"""Fit transits. We do not use scipy.optimize here."""
import numpy as np
from numpy.linalg import lstsq
from .local import helper  # relative import, never matched
import matplotlib.pyplot as plt  # plot with plt.savefig
# reference/flux_ref.npy must not be read


def fit(x):
    """Docstring mentioning curve_fit."""
    y = np.fft.fft(x)
    s = "curve_fit in a normal string counts"
    plt.savefig("fit.png")
    return lstsq(x, y)
'''


def run(tmp_path: Path, checks: list, source: str = SOURCE, **config):
    (tmp_path / "fit.py").write_text(source, encoding="utf-8")
    return CodeAnalysisScorer().score(
        tmp_path, tmp_path, {"target_file": "fit.py", "checks": checks, "weight": 4, **config}
    )


def test_forbidden_imports_match_modules_and_submodules(tmp_path: Path) -> None:
    assert run(tmp_path, [{"forbidden_imports": ["scipy", "batman"]}]).passed  # only in a docstring
    result = run(tmp_path, [{"forbidden_imports": ["matplotlib"]}])
    assert not result.passed and result.details["checks"][0]["found"] == ["matplotlib.pyplot"]
    result = run(tmp_path, [{"forbidden_imports": ["numpy.linalg"]}])
    assert result.details["checks"][0]["found"] == ["numpy.linalg", "numpy.linalg.lstsq"]
    assert run(tmp_path, [{"forbidden_imports": ["local", "numpy.lin"]}]).passed


def test_forbidden_imports_fail_on_syntax_error(tmp_path: Path) -> None:
    result = run(tmp_path, [{"forbidden_imports": ["x"]}], source="def broken(:\n")
    assert not result.passed and "Cannot parse" in result.message


def test_required_pattern_counts_comments(tmp_path: Path) -> None:
    assert run(tmp_path, [{"pattern": r"reference/", "required": True}]).passed
    result = run(tmp_path, [{"pattern": r"np\.linalg\.eig", "required": True}])
    assert not result.passed and result.message == r"Required pattern not found: np\.linalg\.eig"


def test_required_file_pattern_is_satisfied_by_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "spectrum.png").write_bytes(b"png")
    result = run(tmp_path, [{"pattern": r"spectrum\.png", "required": True}])
    assert result.passed and result.details["checks"][0]["satisfied_by_file"] == "spectrum.png"


def test_forbidden_pattern_ignores_comments_and_docstrings(tmp_path: Path) -> None:
    result = run(
        tmp_path, [{"pattern": r"scipy\.optimize", "forbidden": True}, {"pattern": r"_ref\.npy", "forbidden": True}]
    )
    assert result.passed
    assert "only in comments" in result.details["checks"][0]["message"]
    result = run(tmp_path, [{"pattern": "curve_fit", "forbidden": True}])
    assert not result.passed and result.details["checks"][0]["code_count"] == 1


def test_min_count_and_informational_pattern(tmp_path: Path) -> None:
    assert run(tmp_path, [{"pattern": r"np\.", "min_count": 1}]).passed
    result = run(tmp_path, [{"pattern": r"np\.", "min_count": 5}])
    assert not result.passed and result.details["checks"][0]["count"] == 1
    assert run(tmp_path, [{"pattern": "nothing_like_this"}]).passed


def test_per_check_and_line_limits(tmp_path: Path) -> None:
    checks = [{"pattern": "fft", "required": True}, {"pattern": "ifft", "required": True}]
    result = run(tmp_path, checks, scoring_mode="per_check", min_lines=5, max_lines=10)
    # fft ok, ifft missing, 14 lines > max 10
    assert result.score == pytest.approx(4 / 3)
    assert result.details["checks"][-1] == {
        "check": "line_count",
        "lines": 14,
        "passed": False,
        "message": "14 lines > max_lines 10",
    }
    assert run(tmp_path, checks).score == 0.0  # all_or_nothing


def test_missing_target_is_a_plain_zero(tmp_path: Path) -> None:
    result = CodeAnalysisScorer().score(tmp_path, tmp_path, {"weight": 2})
    assert result.score == 0.0 and result.message == "Missing file: simulation.py"
    assert "scorer_internal_error" not in result.details


def test_non_utf8_code_is_a_zero(tmp_path: Path) -> None:
    (tmp_path / "fit.py").write_bytes(b"x = '\xff\xfe'\n")
    result = CodeAnalysisScorer().score(tmp_path, tmp_path, {"target_file": "fit.py", "weight": 2})
    assert result.score == 0.0 and "not valid UTF-8" in result.message


def test_bad_regex_crashes(tmp_path: Path) -> None:
    with pytest.raises(re.error):
        run(tmp_path, [{"pattern": "(unclosed", "required": True}])


def test_kernel_count_detail(tmp_path: Path) -> None:
    result = run(tmp_path, [{"pattern": "kernel"}], source="kernel = 1\nkernel2 = kernel\n")
    assert result.details["kernel_count"] == 3


def test_strip_keeps_strings_that_look_like_comments() -> None:
    code = 'x = "# not a comment"  # real comment\n'
    stripped = strip_comments_and_docstrings(code)
    assert "# not a comment" in stripped and "real comment" not in stripped


def test_strip_falls_back_for_untokenizable_code() -> None:
    stripped = strip_comments_and_docstrings('x = "a # b"  # gone\ndef (\n')
    assert "a # b" in stripped and "gone" not in stripped
