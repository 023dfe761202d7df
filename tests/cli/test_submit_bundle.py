"""`asibench submit`: the schema-v1 bundle it builds, its refusals, and the upload request (contract §3)."""

import json
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cli_client.errors import ExitStatus
from cli_client.remote.credentials import CredentialStore
from contracts.bundle import build_bundle, write_archive
from tests.results_tree import LINUX_NS_SANDBOX, OS_SANDBOX, make_results, sha, write_result
from tests.support import OUR_CLI, read_archive_members, run_cli


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return make_results(tmp_path / "out")


@pytest.fixture
def env(cli_home: dict[str, str]) -> dict[str, str]:
    return cli_home


def test_the_bundle_has_the_contract_layout_and_manifest(results: Path, tmp_path: Path) -> None:
    summary = build_bundle(results, tmp_path / "sub", note="team-x / model-y",
                           benchmark_repo="Apexintelligence-AI/ASI-Bench-seed42")
    manifest = json.loads((tmp_path / "sub" / "manifest.json").read_text(encoding="utf-8"))
    assert summary.manifest == manifest
    assert manifest["submission_schema_version"] == 1
    assert manifest["created_at"].endswith("Z") and "+00:00" not in manifest["created_at"]
    assert manifest["framework_version"] == "0.2.0"
    assert manifest["benchmark_repo"] == "Apexintelligence-AI/ASI-Bench-seed42"
    assert manifest["note"] == "team-x / model-y"
    assert manifest["run_metadata_included"] is True
    assert manifest["instance_count"] == 3
    b3, b3_retry, b4 = ("math.roots_demo__seed42__b3", "math.roots_demo__seed42__b3__attempt2",
                        "math.roots_demo__seed42__b4")
    assert [entry["base_name"] for entry in manifest["instances"]] == [b3, b3_retry, b4]
    assert manifest["instances_missing_outputs"] == [b4]

    first = manifest["instances"][0]
    assert {k: first[k] for k in ("instance_id", "task_id", "prompt_level", "attempt", "agent_name", "status")} == {
        "instance_id": "math.roots_demo__seed42", "task_id": "math.roots_demo", "prompt_level": "b3",
        "attempt": 1, "agent_name": "CodexCLIAdapter", "status": "completed"}
    assert first["result_file"] == f"instances/{b3}/result.json"
    assert first["framework_task_info_file"] == f"instances/{b3}/framework_task_info.json"
    roots = b"\x93NUMPY" + bytes(range(200))
    assert first["output_files"] == [
        {"path": "outputs/roots.npy", "sha256": sha(roots), "bytes": len(roots)},
        {"path": "outputs/solve.py", "sha256": sha(b"print(1)\n"), "bytes": 9},
        {"path": "outputs/nested/manifest.json", "sha256": sha(b'{"agent": "file"}'), "bytes": 17},
    ]
    assert first["missing_outputs"] == []
    assert first["provenance"]["sandbox"] == OS_SANDBOX
    last = manifest["instances"][2]
    assert last["output_files"][-1] == {"path": "roots.npy", "missing": True}
    assert last["missing_outputs"] == ["roots.npy"]

    paths = [item["path"] for item in manifest["files"]]
    assert paths == sorted(paths, key=lambda p: p.split("/"))
    assert "manifest.json" not in paths
    assert f"instances/{b3}/outputs/nested/manifest.json" not in paths
    assert f"instances/{b3}/outputs/roots.npy" in paths and "run_metadata.json" in paths
    for item in manifest["files"]:
        data = (tmp_path / "sub" / item["path"]).read_bytes()
        assert item == {"path": item["path"], "sha256": sha(data), "bytes": len(data)}
    assert (tmp_path / "sub" / "instances" / b3 / "result.json").read_bytes() == \
        (results / "math.roots_demo" / f"{b3}.json").read_bytes()
    shipped = {p.relative_to(tmp_path / "sub").as_posix() for p in (tmp_path / "sub").rglob("*") if p.is_file()}
    assert not any("trajectory" in p or "model_calls" in p or "stderr" in p or "eval_config" in p for p in shipped)


def test_the_archive_holds_one_top_dir_in_pax_format(results: Path, tmp_path: Path) -> None:
    build_bundle(results, tmp_path / "mysub")
    archive = write_archive(tmp_path / "mysub", tmp_path / "mysub.tar.gz")
    with tarfile.open(archive, "r:gz") as tar:
        names = tar.getnames()
        assert tar.format == tarfile.PAX_FORMAT
        assert {name.split("/")[0] for name in names} == {"mysub"}
        assert names[0] == "mysub"
        assert "mysub/manifest.json" in names and "mysub/run_metadata.json" in names
        assert "mysub/instances/math.roots_demo__seed42__b3/outputs" in names
        assert all(m.isreg() or m.isdir() for m in tar.getmembers())


def test_submit_no_upload_builds_locally_and_says_not_submitted(results: Path, tmp_path: Path,
                                                               env: dict[str, str]) -> None:
    out = tmp_path / "bundle.tar.gz"
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--output", str(out), "--no-upload",
                      "--note", "n1", "--benchmark-repo", "seed42"], env)
    assert result.returncode == 0, result.stderr
    assert "NOT SUBMITTED — nothing was uploaded" in result.stdout
    assert "instances: 3" in result.stdout
    assert "math.roots_demo__seed42__b4: missing ['roots.npy']" in result.stdout
    assert out.is_file() and (tmp_path / "bundle" / "manifest.json").is_file()
    assert json.loads((tmp_path / "bundle" / "manifest.json").read_text())["note"] == "n1"


def test_submit_without_an_endpoint_builds_only(results: Path, env: dict[str, str]) -> None:
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results)], env)
    assert result.returncode == 0, result.stderr
    assert "NOT SUBMITTED — nothing was uploaded (no endpoint" in result.stdout
    assert len(list(results.glob("submission_*.tar.gz"))) == 1


def test_submit_keeps_linux_ns_results_for_the_portal_to_judge(tmp_path: Path, env: dict[str, str]) -> None:
    results = make_results(tmp_path / "out", sandbox=LINUX_NS_SANDBOX)
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--no-upload"], env)
    assert result.returncode == 0, result.stderr


def assert_refused(results: Path, env: dict[str, str], message: str, *extra: str) -> None:
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", "http://127.0.0.1:9",
                      "--token", "asi_pat_aaaaaaaaaaaaaaaaaaaa", *extra], env)
    assert result.returncode == 1
    assert result.stderr.strip() == f"Error: {message}"
    assert not list(results.glob("submission_*")), "nothing may be written"


def test_submit_refuses_a_seed31415_run_with_the_local_scoring_hint(tmp_path: Path, env: dict[str, str]) -> None:
    results = tmp_path / "out"
    write_result(results, "math.roots_demo__seed31415", "b1", {"roots.npy": b"1"})
    assert_refused(results, env, "Official result submission only accepts seed42; score seed31415 locally with "
                   "`asibench score`. Rejected: math.roots_demo__seed31415 (seed31415)")


def test_submit_refuses_mixed_seeds_listing_at_most_five(tmp_path: Path, env: dict[str, str]) -> None:
    results = make_results(tmp_path / "out")
    for n in range(7):
        write_result(results, f"math.t{n}__seed7", "b1", {"a.npy": b"1"})
    shown = ", ".join(f"math.t{n}__seed7 (seed7)" for n in range(5))
    assert_refused(results, env, "Official result submission only accepts seed42; score seed31415 locally with "
                   f"`asibench score`. Rejected: {shown}")


def test_submit_refuses_an_instance_without_a_seed(tmp_path: Path, env: dict[str, str]) -> None:
    results = make_results(tmp_path / "out")
    write_result(results, "math.roots_demo__grid255", "b1", {"a.npy": b"1"})
    write_result(results, "math.roots_demo__xseed42", "b1", {"a.npy": b"1"})
    assert_refused(results, env, "Official result submission requires every instance_id to end in an official "
                   "seed suffix; expected seed42. Invalid: math.roots_demo__grid255, math.roots_demo__xseed42")


def test_submit_refuses_a_result_without_a_sandbox_record(tmp_path: Path, env: dict[str, str]) -> None:
    results = tmp_path / "out"
    write_result(results, "math.roots_demo__seed42", "b1", {"a.npy": b"1"}, sandbox=None)
    assert_refused(results, env, "Every result must record the sandbox it ran in (provenance.sandbox with an "
                   "effective_mode); re-run these with a current `asibench run`. Invalid: math.roots_demo__seed42")


def test_submit_refuses_a_benchmark_repo_that_is_not_seed42(results: Path, env: dict[str, str]) -> None:
    assert_refused(results, env, "benchmark_repo must identify the official seed42 dataset "
                   "(Apexintelligence-AI/ASI-Bench-seed42), got 'seed31415'", "--benchmark-repo", "seed31415")


def test_submit_without_results_says_so(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "empty").mkdir()
    assert_refused(tmp_path / "empty", env,
                   f"No per-instance result JSON found under {tmp_path / 'empty'}. Run `asibench run ...` first.")


def test_submit_without_a_token_names_login_and_the_variable(results: Path, env: dict[str, str]) -> None:
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", "http://127.0.0.1:9"], env)
    assert result.returncode == 1
    assert "`asibench login`" in result.stderr and "ASIBENCH_SUBMIT_TOKEN" in result.stderr


class Receiver(BaseHTTPRequestHandler):
    """Records one upload and answers with the configured status and body; answers the token check
    (GET /api/v1/me) with `me` and records every request line in `requests`."""

    seen: dict[str, Any] = {}
    answer: tuple[int, dict[str, Any]] = (201, {})
    me: tuple[int, dict[str, Any]] = (200, {"id": "u1"})
    requests: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        type(self).requests.append(f"GET {self.path} {self.headers.get('Authorization')}")
        self._reply(*type(self).me)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers["Content-Length"])
        body = bytearray()
        while len(body) < length:
            body += self.rfile.read(min(65536, length - len(body)))
        type(self).requests.append(f"POST {self.path} {self.headers.get('Authorization')}")
        type(self).seen.update(path=self.path, headers=dict(self.headers), body=bytes(body))
        self._reply(*type(self).answer)

    def _reply(self, status: int, reply: dict[str, Any]) -> None:
        payload = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("R", (Receiver,), {"seen": {}, "answer": (201, {}), "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_submit_uploads_the_raw_archive_and_prints_the_draft_banner(results: Path, tmp_path: Path,
                                                                    env: dict[str, str], receiver: Any) -> None:
    url, handler = receiver
    handler.answer = (201, {"submission_id": "sub_1", "status": "draft", "integrity_ok": True,
                            "incomplete_instances": ["math.roots_demo__seed42__b4"], "message": "Parsed 3 results.",
                            "confirm_url": f"{url}/submit/submissions/sub_1"})
    out = tmp_path / "run1.tar.gz"
    env = {**env, "ASIBENCH_SUBMIT_TOKEN": "asi_pat_envtokenenvtoken"}
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--output", str(out),
                      "--endpoint", f"{url}/submit/settings"], env)
    assert result.returncode == 0, result.stderr
    seen = handler.seen
    assert seen["path"] == "/api/v1/submissions/bundle"
    assert seen["body"] == out.read_bytes()
    assert seen["headers"]["Content-Type"] == "application/gzip"
    assert seen["headers"]["X-ASIBench-Filename"] == "run1.tar.gz"
    assert seen["headers"]["Authorization"] == "Bearer asi_pat_envtokenenvtoken"
    assert seen["headers"]["Content-Length"] == str(out.stat().st_size)
    for line in ("submission_id: sub_1", "status: draft", "integrity: OK", "incomplete instances: 1",
                 "Parsed 3 results.", "DRAFT", f"{url}/submit/submissions/sub_1"):
        assert line in result.stdout
    assert "NOT SUBMITTED" not in result.stdout


def test_submit_fails_with_the_portals_detail_on_a_refusal(results: Path, env: dict[str, str],
                                                           receiver: Any) -> None:
    url, handler = receiver
    handler.answer = (400, {"detail": "wrong_seed: instance id x is seed31415"})
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", url,
                      "--token", "asi_pat_explicitexplicit"], env)
    assert result.returncode == 1
    assert "Error: HTTP 400: wrong_seed: instance id x is seed31415" in result.stderr
    assert handler.seen["headers"]["Authorization"] == "Bearer asi_pat_explicitexplicit"


def test_submit_checks_the_token_before_packing_anything(results: Path, tmp_path: Path, env: dict[str, str],
                                                        receiver: Any) -> None:
    url, handler = receiver
    handler.me = (401, {"detail": "Invalid token."})
    before = sorted(p.name for p in results.iterdir())
    env = {**env, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", url,
                      "--token", "asi_pat_revokedrevokedrevoked"], env)
    assert result.returncode == ExitStatus.ERROR
    assert result.stderr.strip() == (f"Error: The Portal at {url} refused the token (Invalid token): run `asibench "
                                     "login`, or pass --token / set ASIBENCH_SUBMIT_TOKEN. Nothing was packed or "
                                     "uploaded.")
    assert "Bundle" not in result.stdout
    assert handler.requests == ["GET /api/v1/me Bearer asi_pat_revokedrevokedrevoked"]
    assert sorted(p.name for p in results.iterdir()) == before and list((tmp_path / "tmp").iterdir()) == []


def test_an_unreachable_portal_is_reported_before_packing(results: Path, env: dict[str, str]) -> None:
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", "http://127.0.0.1:9",
                      "--token", "asi_pat_aaaaaaaaaaaaaaaaaaaa"], env)
    assert result.returncode == ExitStatus.ERROR
    assert "Could not reach the Portal at http://127.0.0.1:9/api/v1/me" in result.stderr
    assert "Bundle" not in result.stdout and not list(results.glob("submission_*"))


def test_an_upload_is_packed_outside_the_results_dir_and_removed_after(results: Path, tmp_path: Path,
                                                                       env: dict[str, str], receiver: Any) -> None:
    url, handler = receiver
    handler.answer = (201, {"submission_id": "sub_2", "status": "draft", "created": True,
                            "confirm_url": f"{url}/submit/submissions/sub_2"})
    before = sorted(p.name for p in results.iterdir())
    (tmp_path / "tmp").mkdir()
    env = {**env, "TMPDIR": str(tmp_path / "tmp"), "ASIBENCH_SUBMIT_TOKEN": "asi_pat_envtokenenvtoken"}
    for _ in range(2):
        result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", url], env)
        assert result.returncode == ExitStatus.OK, result.stderr
        assert "Bundle packed (in a temporary directory, removed after the upload)" in result.stdout
        assert sorted(p.name for p in results.iterdir()) == before, "nothing is left in the results dir"
        assert list((tmp_path / "tmp").iterdir()) == [], "the temporary bundle is gone"
    name = handler.seen["headers"]["X-ASIBench-Filename"]
    assert name.startswith("submission_") and name.endswith(".tar.gz")
    members = read_archive_members(handler.seen["body"])
    assert {m.split("/")[0] for m in members} == {name[: -len(".tar.gz")]}
    assert handler.requests[0] == "GET /api/v1/me Bearer asi_pat_envtokenenvtoken"


def test_submit_uploads_to_the_portal_of_the_last_login(results: Path, env: dict[str, str], receiver: Any) -> None:
    url, handler = receiver
    handler.answer = (201, {"submission_id": "sub_3", "status": "draft"})
    store = CredentialStore.from_env(env)
    store.save("http://127.0.0.1:9/api/v1", "asi_pat_olderloginolderlogin", {})
    store.save(f"{url}/api/v1", "asi_pat_latestloginlatestlogin", {})
    store.save("https://receiver.example/upload", "asi_pat_customreceivercustom", {})  # not a Portal: never chosen
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results)], env)
    assert result.returncode == ExitStatus.OK, result.stderr
    assert f"Uploading to {url}/api/v1/submissions/bundle" in result.stdout
    assert handler.requests == ["GET /api/v1/me Bearer asi_pat_latestloginlatestlogin",
                                "POST /api/v1/submissions/bundle Bearer asi_pat_latestloginlatestlogin"]
    # The environment still wins over the saved login, as in the official client.
    named = run_cli([*OUR_CLI, "submit", "--results-dir", str(results)],
                    {**env, "ASIBENCH_SUBMIT_ENDPOINT": "http://127.0.0.1:9"})
    assert named.returncode == ExitStatus.ERROR and "http://127.0.0.1:9/api/v1/me" in named.stderr


@pytest.mark.parametrize(("state", "said"), [
    ("published", "ALREADY SUBMITTED — the Portal already has these results as run sub_4 (published)"),
    ("draft", "It is still a DRAFT: open the page above and click Confirm"),
])
def test_submit_says_plainly_when_the_results_were_already_submitted(results: Path, env: dict[str, str],
                                                                     receiver: Any, state: str, said: str) -> None:
    url, handler = receiver
    reply = {"submission_id": "sub_4", "status": "scored" if state == "published" else "draft", "state": state,
             "created": False, "run_url": f"{url}/submit/submissions/sub_4",
             "message": "These results were already uploaded (8 results for 2 tasks), nothing new was created."}
    if state == "draft":
        reply["confirm_url"] = reply["run_url"]
    handler.answer = (200, reply)
    result = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--endpoint", url,
                      "--token", "asi_pat_explicitexplicit"], env)
    assert result.returncode == ExitStatus.OK, result.stderr
    assert said in result.stdout and f"{url}/submit/submissions/sub_4" in result.stdout
    assert "nothing new was created" in result.stdout
    assert "UPLOAD COMPLETE" not in result.stdout
