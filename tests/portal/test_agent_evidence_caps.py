"""portal.submissions.evidence on hostile result.json shapes: every field typed, clamped and cut."""

import math

from portal.submissions.evidence import EvidenceLimits, agent_evidence

LIMITS = EvidenceLimits(log_tail_chars=1_000)


def evidence(agent_output: object, **result: object) -> dict:
    return agent_evidence({"agent_output": agent_output, **result}, None, LIMITS)


def test_wrong_types_give_empty_fields_not_errors() -> None:
    got = evidence({"log": {"not": "text"}, "trajectory_summary": [1, 2], "file_versions": "x",
                    "process_exit_code": "0", "termination_signal": True, "error_message": 12},
                   status=["completed"], execution_time_seconds="fast")
    assert got["log_tail"] == "" and got["log_chars"] == 0 and got["trajectory"] is None
    assert got["file_versions"] == {} and got["exit_code"] is None and got["signal"] is None
    assert got["error"] == "" and got["status"] == "" and got["elapsed_seconds"] is None
    assert evidence("not an object")["trajectory"] is None


def test_counts_are_clamped_and_non_finite_numbers_dropped() -> None:
    got = evidence({"trajectory_summary": {"total_turns": -5, "total_tool_calls": 10**30,
                                           "thinking_total_chars": math.nan, "total_code_executions": math.inf,
                                           "code_execution_failures": 2.9}},
                   execution_time_seconds=-1.0)
    t = got["trajectory"]
    assert (t["turns"], t["tool_calls"], t["thinking_chars"], t["code_executions"], t["code_failures"]) == (
        0, 10**9, None, None, 2)
    assert got["elapsed_seconds"] is None


def test_lists_and_maps_keep_a_bounded_number_of_short_items() -> None:
    got = evidence({
        "trajectory_summary": {"tool_call_distribution": {f"tool{i}" + "x" * 500: i for i in range(5_000)},
                               "unique_files_modified": [f"/f{i}" + "y" * 1_000 for i in range(5_000)]},
        "file_versions": {f"file{i}": [{"version": v, "content_hash": "ab" * 8, "diff_summary": "d" * 10_000}
                                       for v in range(1_000)] for i in range(500)},
    })
    t = got["trajectory"]
    assert len(t["tools"]) == 30 and all(len(name) <= 80 for name in t["tools"])
    assert next(iter(t["tools"].values())) == 4_999  # the most used first
    assert len(t["files_modified"]) == 50 and t["files_modified_total"] == 5_000
    assert all(len(f) <= 240 for f in t["files_modified"])
    assert len(got["file_versions"]) == 50 and got["file_versions_total"] == 500
    versions = got["file_versions"]["file0"]
    assert len(versions) == 20 and versions[-1]["version"] == 999 and len(versions[0]["diff"]) == 300


def test_text_loses_control_characters_escapes_and_bidi_overrides_but_keeps_lines() -> None:
    got = evidence({"log": "a\x00b\x1b[1;31mc\x1b[0m\r\nd\te\u202ef\u2066g\x7f\x85", "error_message": "x" * 5_000})
    assert got["log_tail"] == "abc\nd\tefg"
    assert len(got["error"]) == 2_000
