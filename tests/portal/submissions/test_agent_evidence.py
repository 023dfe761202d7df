"""What the agent did (log, trajectory summary, file history, status, timings) kept at intake within caps,
shown to the run's owner and to maintainers only; and the run-configuration flags computed at intake."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from contracts.bundle import build_bundle, write_archive
from portal.submissions.bundle_verify import VerifiedBundle, VerifiedEntry
from portal.submissions.conformance import conformance_flags
from portal.submissions.models import Submission, SubmissionEntry
from scoring.models import Dataset
from tests.leaderboard.factories import make_catalog
from tests.results_tree import LINUX_NS_SANDBOX, OS_SANDBOX, write_result
from tests.support import issue_token

pytestmark = pytest.mark.django_db

TASKS = ("math.task_1", "math.task_2")
MARKER = "agent-log-marker-7f3a"
HOSTILE_LOG = ("x" * 300_000 + "\x1b[31mred\x1b[0m\x07\x08\u202e<script>alert('pwn')</script>\n"
               + MARKER + " final line")
TRAJECTORY = {"total_turns": 3, "total_tool_calls": 5, "tool_call_distribution": {"Write": 2, "Bash": 3},
              "thinking_total_chars": 1200, "total_code_executions": 3, "code_execution_failures": 1,
              "unique_files_modified": ["constants.py", "result.json"]}
FILE_VERSIONS = {"constants.py": [
    {"version": 1, "action": "write", "step_index": 2, "timestamp_ms": None, "content_hash": "0123456789abcdef",
     "content_length": 40, "diff_summary": None},
    {"version": 2, "action": "edit", "step_index": 7, "timestamp_ms": 1, "content_hash": "<b>not-hex</b>",
     "content_length": 41, "diff_summary": "'G = 6.67' → '<i>G = 6.674</i>'"}]}


# How a result ends when it does not complete, as the official client records it (§5.4).
ENDINGS: dict[str, dict[str, Any]] = {
    "completed": {"error_message": None, "process_exit_code": 0, "termination_signal": None, "timeout_phase": None},
    "timeout": {"error_message": "CodexCLIAdapter timed out after 10800s (process tree force-killed via SIGKILL)",
                "process_exit_code": None, "termination_signal": 9, "timeout_phase": "process_execution"},
    "failed": {"error_message": "CodexCLIAdapter exited with code 1", "process_exit_code": 1,
               "termination_signal": None, "timeout_phase": None},
}


def result_tree(root: Path, *, levels: tuple[str, ...] = ("b1", "b2", "b3", "b4"), timeout: int | None = 10800,
                attempts: int = 1, sandbox: dict[str, Any] | None = None, evidence: bool = True,
                outputs: dict[str, bytes] | None = None,
                endings: dict[tuple[str, str], tuple[str, float]] | None = None) -> Path:
    """A results tree for TASKS with the agent evidence the official client records (§5.4); `endings`
    gives (task, level) a status other than completed, and its elapsed seconds."""
    for task in TASKS:
        iid = f"{task}__seed42"
        for level in levels:
            status, elapsed = (endings or {}).get((task, level), ("completed", 12.5))
            for attempt in range(1, attempts + 1):
                data = outputs or {"result.json": f'{{"v": "{task}{level}"}}'.encode(), "curve.npy": b"\x93NUMPY1"}
                kwargs = {"sandbox": sandbox} if sandbox else {}
                base = write_result(root, iid, level, data, attempt=attempt, status=status, **kwargs)
                path = root / task / f"{base}.json"
                result = json.loads(path.read_text())
                result["execution_time_seconds"] = elapsed
                if evidence:
                    result["agent_output"].update(
                        log=HOSTILE_LOG if (task, level) == (TASKS[0], "b4") else f"ran {base}",
                        trajectory_summary=TRAJECTORY, file_versions=FILE_VERSIONS, **ENDINGS[status])
                path.write_text(json.dumps(result))
            info = root / "instances" / iid / "framework_task_info.json"
            fti = json.loads(info.read_text())
            if timeout is not None:
                fti["timeout_seconds"] = timeout
            info.write_text(json.dumps(fti))
    return root


def upload(client: Client, user: Any, results: Path, tmp_path: Path, name: str = "sub") -> Submission:
    bundle = tmp_path / "bundles" / name
    build_bundle(results, bundle)
    body = write_archive(bundle, bundle.with_suffix(".tar.gz")).read_bytes()
    response = client.generic("POST", "/api/v1/submissions/bundle", body, content_type="application/gzip",
                              HTTP_AUTHORIZATION=f"Bearer {issue_token(user)}")
    assert response.status_code in (200, 201), response.content
    return Submission.objects.get(id=response.json()["submission_id"])


@pytest.fixture
def catalog(db: None) -> dict:
    return make_catalog({"math": 2})


@pytest.fixture
def run(catalog, submitter, tmp_path) -> Submission:
    return upload(Client(), submitter.user, result_tree(tmp_path / "results"), tmp_path)


def entry(run: Submission, task: str, level: str) -> SubmissionEntry:
    return run.entries.get(base_name=f"{task}__seed42__{level}")


# --- intake keeps the evidence, capped and cleaned -----------------------------------------------

def test_intake_keeps_each_results_status_timings_trajectory_and_file_history(run):
    evidence = entry(run, TASKS[1], "b2").evidence
    assert evidence["status"] == "completed" and evidence["exit_code"] == 0
    assert evidence["elapsed_seconds"] == 12.5 and evidence["timeout_seconds"] == 10800
    assert evidence["log_tail"] == f"ran {TASKS[1]}__seed42__b2"
    assert evidence["trajectory"] == {"turns": 3, "tool_calls": 5, "tools": {"Bash": 3, "Write": 2},
                                      "thinking_chars": 1200, "code_executions": 3, "code_failures": 1,
                                      "files_modified": ["constants.py", "result.json"], "files_modified_total": 2}
    versions = evidence["file_versions"]["constants.py"]
    assert [(v["version"], v["action"], v["hash"]) for v in versions] == [
        (1, "write", "0123456789abcdef"), (2, "edit", "")]  # a hash that is not hex is dropped


def test_a_huge_log_keeps_only_its_tail_without_control_characters(run, settings):
    evidence = entry(run, TASKS[0], "b4").evidence
    assert evidence["log_chars"] == len(HOSTILE_LOG)
    tail = evidence["log_tail"]
    assert len(tail) == settings.EVIDENCE_LOG_TAIL_CHARS and tail.endswith(MARKER + " final line")
    assert "red<script>alert('pwn')</script>" in tail  # kept as text; templates escape it
    assert not any(c in tail for c in "\x1b\x07\x08\u202e")


def test_results_without_evidence_keep_an_empty_record(catalog, submitter, tmp_path):
    run = upload(Client(), submitter.user, result_tree(tmp_path / "r", evidence=False, timeout=None), tmp_path)
    evidence = entry(run, TASKS[0], "b1").evidence
    assert evidence["trajectory"] is None and evidence["file_versions"] == {} and evidence["log_tail"] == ""
    assert evidence["timeout_seconds"] is None and evidence["elapsed_seconds"] == 12.5


# --- who sees it --------------------------------------------------------------------------------

def test_the_owner_sees_the_evidence_on_the_run_page_escaped(run, submitter, client):
    client.force_login(submitter.user)
    page = client.get(f"/submit/submissions/{run.id}").content.decode()
    assert 'data-testid="agent-evidence"' in page and MARKER in page
    assert "&lt;script&gt;alert(&#x27;pwn&#x27;)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "&lt;i&gt;G = 6.674&lt;/i&gt;" in page


def test_another_user_and_an_anonymous_visitor_see_none_of_it(run, other_user, client):
    anonymous = client.get(f"/submit/submissions/{run.id}")
    assert anonymous.status_code == 302 and MARKER not in anonymous.content.decode()
    client.force_login(other_user.user)
    for url in (f"/submit/submissions/{run.id}", f"/leaderboard/review/{run.id}/", f"/api/v1/submissions/{run.id}",
                "/submit/dashboard"):
        response = client.get(url)
        assert MARKER not in response.content.decode() and "constants.py" not in response.content.decode(), url
    assert client.get(f"/submit/submissions/{run.id}").status_code == 404


def test_the_maintainer_sees_per_result_evidence_and_run_and_level_totals(run, maintainer, client):
    client.force_login(maintainer.user)
    page = client.get(f"/leaderboard/review/{run.id}/").content.decode()
    assert MARKER in page and "&lt;script&gt;" in page and "<script>alert" not in page
    # 8 results of 3 turns and 5 tool calls: the run's totals, then 2 results per level.
    run_row = page.split('data-testid="evidence-run"', 1)[1].split("</tr>", 1)[0]
    assert "<td class=\"num\">8</td>" in run_row and "<td class=\"num\">24</td>" in run_row
    assert "<td class=\"num\">40</td>" in run_row and "<td class=\"num\">100.0</td>" in run_row
    level_row = page.split('data-testid="evidence-level-b4"', 1)[1].split("</tr>", 1)[0]
    assert "<td class=\"num\">6</td>" in level_row and "<td class=\"num\">10</td>" in level_row
    assert "3 turns</span>, 5 tool calls, wrote constants.py, result.json" in page


def test_timeouts_and_errors_are_totalled_per_run_and_level_with_elapsed_against_the_timeout(
        catalog, submitter, maintainer, tmp_path, client):
    endings = {(TASKS[0], "b3"): ("timeout", 10800.4), (TASKS[1], "b4"): ("timeout", 10801.0),
               (TASKS[1], "b3"): ("failed", 61.0)}
    run = upload(Client(), submitter.user, result_tree(tmp_path / "r", endings=endings), tmp_path)
    timed_out = entry(run, TASKS[0], "b3").evidence
    assert (timed_out["status"], timed_out["signal"], timed_out["timeout_phase"], timed_out["exit_code"]) == (
        "timeout", 9, "process_execution", None)
    assert timed_out["elapsed_seconds"] == 10800.4 and timed_out["timeout_seconds"] == 10800
    failed = entry(run, TASKS[1], "b3").evidence
    assert (failed["status"], failed["exit_code"], failed["error"]) == (
        "failed", 1, "CodexCLIAdapter exited with code 1")

    client.force_login(maintainer.user)
    page = client.get(f"/leaderboard/review/{run.id}/").content.decode()

    def totals(testid: str) -> list[str]:
        row = page.split(f'data-testid="{testid}"', 1)[1].split("</tr>", 1)[0]
        return re.findall(r'<td class="num">([^<]*)</td>', row)

    # results, with trajectory, turns, tool calls, failed code runs, wall time, timeouts, errors
    assert totals("evidence-run") == ["8", "8", "24", "40", "8", str(round(5 * 12.5 + 10800.4 + 10801.0 + 61.0, 1)),
                                      "2", "1"]
    assert totals("evidence-level-b3")[-3:] == [str(round(10800.4 + 61.0, 1)), "1", "1"]
    assert totals("evidence-level-b4")[-3:] == [str(round(12.5 + 10801.0, 1)), "1", "0"]
    assert totals("evidence-level-b1")[-3:] == ["25.0", "0", "0"]

    def details(base: str) -> str:
        return page.split(f'data-testid="evidence-{base}"', 1)[1].split("</details>", 1)[0]

    shown = re.sub(r"\s+", " ", details(f"{TASKS[0]}__seed42__b3"))
    assert "· timeout · 10800.4 s of 10800 s" in shown
    assert "<dt>Elapsed</dt><dd>10800.4 s of a 10800 s timeout</dd>" in shown
    assert "signal 9 · process_execution" in shown and "timed out after 10800s" in shown
    shown = re.sub(r"\s+", " ", details(f"{TASKS[1]}__seed42__b3"))
    assert "· failed · 61.0 s of 10800 s" in shown and "exit code 1" in shown
    assert '<dd class="error">CodexCLIAdapter exited with code 1</dd>' in shown
    assert "<dt>Elapsed</dt><dd>12.5 s of a 10800 s timeout</dd>" in re.sub(
        r"\s+", " ", details(f"{TASKS[1]}__seed42__b1"))


def test_the_published_board_and_its_exports_carry_no_evidence(run, maintainer, client):
    from leaderboard.services import run_review_publish
    from scoring.models import ScoringRun

    Submission.objects.filter(id=run.id).update(status=Submission.Status.SCORED, confirmed_at=timezone.now(),
                                                scored_at=timezone.now())
    ScoringRun.objects.create(submission=run, number=1, status=ScoringRun.Status.COMPLETE, finished_at=timezone.now(),
                              aggregate={"levels": {"b1": 10.0}, "overall": 10.0, "results_counted": 8})
    board_entry = run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Public run",
                                     override_incomplete=True, public_reason="A partial run, listed apart.")
    for url in ("/leaderboard/?show=all", f"/leaderboard/entries/{board_entry.id}/", "/leaderboard/export.csv",
                "/api/v1/leaderboard"):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert MARKER not in body and "constants.py" not in body and "thinking" not in body, url


# --- conformance flags ------------------------------------------------------------------------

def kinds(run: Submission) -> set[str]:
    return {flag["kind"] for flag in run.conformance}


def test_a_run_as_the_benchmark_prescribes_raises_no_flag(run, maintainer, client):
    assert run.conformance == []
    client.force_login(maintainer.user)
    assert 'data-testid="no-conformance-flags"' in client.get(f"/leaderboard/review/{run.id}/").content.decode()


def test_a_shorter_timeout_is_flagged_and_an_unrecorded_one_is_not(catalog, submitter, tmp_path, maintainer, client):
    short = upload(Client(), submitter.user, result_tree(tmp_path / "a", timeout=600), tmp_path, "a")
    assert kinds(short) == {"timeout"}
    assert "8 result(s) ran with a 600 s timeout (the benchmark's is 10800 s)" in short.conformance[0]["detail"]
    client.force_login(maintainer.user)
    assert 'data-testid="conformance-timeout"' in client.get(f"/leaderboard/review/{short.id}/").content.decode()
    unrecorded = upload(Client(), submitter.user, result_tree(tmp_path / "b", timeout=None, evidence=False),
                        tmp_path, "b")
    assert "timeout" not in kinds(unrecorded)


def test_retries_are_flagged(catalog, submitter, tmp_path):
    run = upload(Client(), submitter.user, result_tree(tmp_path / "a", attempts=2), tmp_path)
    assert kinds(run) == {"attempts"}
    assert run.conformance[0]["detail"].startswith("8 result(s) are attempt 2 or later")


def test_another_client_version_is_flagged(catalog, submitter, tmp_path, settings):
    settings.DATASET_RUN_POLICY = {**settings.DATASET_RUN_POLICY,
                                   "seed42": {**settings.DATASET_RUN_POLICY["seed42"], "client_versions": ["0.3.0"]}}
    run = upload(Client(), submitter.user, result_tree(tmp_path / "a"), tmp_path)
    assert kinds(run) == {"client_version"}
    assert "client '0.2.0'; seed42's policy is 0.3.0" in run.conformance[0]["detail"]


def test_a_sandbox_other_than_the_datasets_policy_is_flagged_even_where_accepted(catalog, submitter, tmp_path):
    run = upload(Client(), submitter.user, result_tree(tmp_path / "a", sandbox=LINUX_NS_SANDBOX), tmp_path)
    assert kinds(run) == {"sandbox"}
    assert "results ran in linux_ns ×8; seed42's policy is os, this Portal accepts linux_ns, os" in \
        run.conformance[0]["detail"]


# The policy is each dataset's: seed42's is the official service's (Docker only); seed31415 is scored
# locally, anywhere. Checked on verified bundles of either dataset (intake takes seed42 only).

def verified(dataset: str, modes: list[str], version: str = "0.2.0") -> VerifiedBundle:
    sandboxes = {"os": OS_SANDBOX, "linux_ns": LINUX_NS_SANDBOX,
                 "none": {**LINUX_NS_SANDBOX, "requested_mode": "none", "effective_mode": "none"},
                 "task": {**LINUX_NS_SANDBOX, "requested_mode": "task", "effective_mode": "task"}}
    entries = [VerifiedEntry(base_name=f"math.task_{i}__{dataset}__{level}", instance_id=f"math.task_{i}__{dataset}",
                             task_id=f"math.task_{i}", prompt_level=level, attempt=1, status="completed",
                             agent_name="codex_cli", provenance={"sandbox": sandboxes[mode]}, outputs=[],
                             missing_outputs=[], timed_out_with_outputs=False, evidence={"timeout_seconds": 10800})
               for i, mode in enumerate(modes, start=1) for level in ("b1", "b2", "b3", "b4")]
    return VerifiedBundle(top_dir="sub", created_at=None, framework_version=version, note=None, benchmark_repo=None,
                          instance_count=len(entries), run_metadata_included=False, entries=entries,
                          incomplete_instances=[], archive_sha256="0" * 64, archive_bytes=1, uncompressed_bytes=1,
                          member_count=1)


def flags_for(name: str, modes: list[str], submitter, version: str = "0.2.0") -> dict[str, str]:
    dataset = Dataset.objects.get(name=name)
    flags = conformance_flags(verified(name, modes, version), dataset, {"owner": submitter.user, "dataset": dataset})
    return {flag["kind"]: flag["detail"] for flag in flags}


@pytest.mark.parametrize(("dataset", "modes", "flagged"), [
    ("seed42", ["os", "os"], False),
    ("seed42", ["os", "linux_ns"], True),
    ("seed31415", ["linux_ns", "none"], False),
    ("seed31415", ["os", "linux_ns"], False),
    ("seed31415", ["os", "task"], True),
])
def test_the_sandbox_is_checked_against_each_datasets_policy(catalog, submitter, dataset, modes, flagged):
    flags = flags_for(dataset, modes, submitter)
    assert ("sandbox" in flags) is flagged, flags
    assert set(flags) <= {"sandbox"}
    if flagged:
        odd = next(mode for mode in modes if mode in ("linux_ns", "task"))
        assert flags["sandbox"].startswith(f"results ran in {odd} ×4; {dataset}'s policy is ")


def test_client_versions_are_checked_against_each_datasets_policy(catalog, submitter, settings):
    settings.DATASET_RUN_POLICY = {
        "seed42": {**settings.DATASET_RUN_POLICY["seed42"], "client_versions": ["0.2.0"]},
        "seed31415": {**settings.DATASET_RUN_POLICY["seed31415"], "client_versions": ["0.2.0", "0.2.1"]},
    }
    assert "client_version" not in flags_for("seed42", ["os"], submitter, "0.2.0")
    assert flags_for("seed42", ["os"], submitter, "0.2.1")["client_version"] == (
        "made with client '0.2.1'; seed42's policy is 0.2.0")
    assert "client_version" not in flags_for("seed31415", ["os"], submitter, "0.2.1")
    assert flags_for("seed31415", ["os"], submitter, "0.1.9")["client_version"] == (
        "made with client '0.1.9'; seed31415's policy is 0.2.0, 0.2.1")


def test_whole_levels_without_results_are_flagged(catalog, submitter, tmp_path):
    run = upload(Client(), submitter.user, result_tree(tmp_path / "a", levels=("b1", "b3")), tmp_path)
    assert kinds(run) == {"missing_levels"}
    assert run.conformance[0]["detail"] == "no results at all for b2, b4"


def confirm(run: Submission) -> None:
    """What Confirm leaves behind for the probing check: the confirmed run and its row in the attempt ledger."""
    from portal.submissions.services import attempt_record

    Submission.objects.filter(id=run.id).update(status=Submission.Status.SCORED, confirmed_at=timezone.now())
    attempt_record(run)


def test_many_confirmed_attempts_with_small_changes_are_flagged_as_probing(catalog, submitter, tmp_path, settings):
    settings.PROBING_MIN_ATTEMPTS = 3
    settings.PROBING_MAX_CHANGED_PERCENT = 20
    first = upload(Client(), submitter.user, result_tree(tmp_path / "r1"), tmp_path, "s1")
    assert "probing" not in kinds(first)
    confirm(first)
    second = upload(Client(), submitter.user, result_tree(tmp_path / "r2", outputs={"result.json": b"{}"}),
                    tmp_path, "s2")
    assert "probing" not in kinds(second)  # only the second attempt
    confirm(second)
    # Third attempt: one of eight results changed since the last confirmed run (12.5% <= 20%).
    third_tree = result_tree(tmp_path / "r3", outputs={"result.json": b"{}"})
    changed = third_tree / TASKS[0] / f"{TASKS[0]}__seed42__b2.outputs" / "result.json"
    changed.write_bytes(b'{"tweaked": 1}')
    meta = third_tree / TASKS[0] / f"{TASKS[0]}__seed42__b2.json"
    result = json.loads(meta.read_text())
    result["agent_output"]["persisted_outputs"]["files"][0].update(
        sha256=__import__("hashlib").sha256(b'{"tweaked": 1}').hexdigest(), bytes=14)
    meta.write_text(json.dumps(result))
    third = upload(Client(), submitter.user, third_tree, tmp_path, "s3")
    assert kinds(third) == {"probing"}
    assert f"attempt 3 at these tasks of seed42 by this owner, whatever its labels; against the last confirmed run " \
           f"({str(second.id)[:8]}), " \
           f"1 of 8 shared results changed ({TASKS[0]}__seed42__b2)" in third.conformance[0]["detail"]


def test_a_third_attempt_that_changes_much_is_not_probing(catalog, submitter, tmp_path, settings):
    settings.PROBING_MIN_ATTEMPTS = 3
    for n in (1, 2):
        confirm(upload(Client(), submitter.user, result_tree(tmp_path / f"r{n}", outputs={"result.json": b"{}"}),
                       tmp_path, f"s{n}"))
    third = upload(Client(), submitter.user, result_tree(tmp_path / "r3"), tmp_path, "s3")
    assert "probing" not in kinds(third)


def _with_tools(results: Path, allow: bool, mode: str) -> Path:
    for path in results.glob("*/*__b?.json"):
        result = json.loads(path.read_text())
        result["provenance"]["agent"].update(allow_external_tools=allow, tool_mode=mode)
        path.write_text(json.dumps(result))
    return results


def test_external_tools_enabled_where_the_policy_forbids_them_are_flagged_and_shown(catalog, submitter, maintainer,
                                                                                    tmp_path, settings):
    settings.DATASET_RUN_POLICY = {**settings.DATASET_RUN_POLICY,
                                   "seed42": {**settings.DATASET_RUN_POLICY["seed42"], "client_versions": ["0.2.0"]}}
    run = upload(Client(), submitter.user, _with_tools(result_tree(tmp_path / "on"), True, "unrestricted"), tmp_path,
                 "on")
    assert "external_tools" in kinds(run)
    flag = next(f for f in run.conformance if f["kind"] == "external_tools")
    assert flag["detail"].startswith("8 result(s) ran with external tools enabled (tool mode unrestricted ×8; "
                                     "external tools enabled ×8); seed42's policy forbids them")
    off = upload(Client(), submitter.user, _with_tools(result_tree(tmp_path / "off", outputs={"result.json": b"{}"}),
                                                       False, "restricted"), tmp_path, "off")
    assert "external_tools" not in kinds(off)
    settings.DATASET_RUN_POLICY = {**settings.DATASET_RUN_POLICY,
                                   "seed42": {**settings.DATASET_RUN_POLICY["seed42"], "external_tools": True}}
    allowed = upload(Client(), submitter.user, _with_tools(result_tree(tmp_path / "ok", outputs={"x": b"1"}), True,
                                                           "search"), tmp_path, "ok")
    assert "external_tools" not in kinds(allowed)
    reviewer = Client()
    reviewer.force_login(maintainer.user)
    page = reviewer.get(f"/leaderboard/review/{run.id}/").content.decode()
    assert 'data-testid="review-tools">tool mode unrestricted ×8; external tools enabled ×8<' in page
    assert "external tools enabled where the dataset&#x27;s policy forbids them" in page


def test_the_entry_page_shows_the_declared_tools(run, maintainer, client):
    from leaderboard.services import run_review_publish
    from scoring.models import ScoringRun

    Submission.objects.filter(id=run.id).update(status=Submission.Status.SCORED, confirmed_at=timezone.now())
    ScoringRun.objects.create(submission=run, number=1, status=ScoringRun.Status.COMPLETE, finished_at=timezone.now(),
                              aggregate={"levels": {"b1": 10.0}, "overall": 10.0, "results_counted": 8})
    entry = run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Tools",
                               override_incomplete=True, public_reason="partial")
    page = client.get(f"/leaderboard/entries/{entry.id}/").content.decode()
    assert 'data-testid="entry-tools">tool mode restricted ×8; external tools not recorded ×8<' in page
