"""`asibench run` with real agents, real subprocesses and real bubblewrap (client contract §5)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from cli_client import CLIENT_VERSION
from cli_client.errors import ExitStatus
from contracts.digests import instance_dir_input_digest
from scoring.engine import anonymised_task_id, declared_outputs, load_task
from scoring.sandbox.process import tree_remove
from tests.cli.agent_runs import AGENTS, TASK_IDS, agent_run, cli, make_instances, snapshot, synthetic_instance
from tests.support import REPO, cli_env, host_pids_with, wait_for

pytestmark = pytest.mark.slow

SANDBOX_PROVENANCE = {
    "none": {"requested_mode": "none", "effective_mode": "none", "enforcement_status": "not_requested",
             "verification_status": "not_applicable", "image_identity": None},
    "linux_ns": {"requested_mode": "linux_ns", "effective_mode": "linux_ns", "enforcement_status": "fail_closed",
                 "verification_status": "linux_namespace", "image_identity": None},
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "cli_runs"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("agent", "sandbox"),
                         [("reference", "none"), ("naive", "linux_ns"), ("reference", "linux_ns"), ("naive", "none")])
def test_it_writes_the_contract_results_tree(base: Path, agent: str, sandbox: str) -> None:
    instances = make_instances(base)
    before = snapshot(instances)
    out = agent_run(base, agent, sandbox)
    assert snapshot(instances) == before, "the instances dir must never be written"

    meta = load(out / "run_metadata.json")
    assert meta["framework_version"] == "0.2.0"
    assert {"git_commit", "git_dirty", "timestamp", "python_version", "platform", "dependencies"} <= set(meta)
    assert meta["timestamp"].endswith("+00:00")
    assert meta["sandbox"] == SANDBOX_PROVENANCE[sandbox]
    assert meta["agent_config"] == {
        "agent_name": None, "cmd_template": AGENTS[agent].replace(str(REPO), "<repo_root>"), "config": {},
        "allow_external_tools": False, "tool_mode": "restricted", "adapter_class": "CLIAgentAdapter"}
    assert meta["task_versions"] == {tid: "1.0" for tid in TASK_IDS}
    assert set(meta["task_runtime"]) == set(TASK_IDS)

    for task_id in TASK_IDS:
        task = load_task(REPO / "tasks" / task_id.replace(".", "/"))
        instance_id = f"{task_id}__seed31415"
        stem = f"{instance_id}__b1"
        result = load(out / task_id / f"{stem}.json")
        params = load(instances / instance_id / "instance_meta.json")["params_used"]
        assert result["result_schema_version"] == 1
        assert (result["instance_id"], result["task_id"], result["attempt"], result["prompt_level"]) == (
            instance_id, task_id, 1, "b1")
        assert result["agent_name"] == "CLIAgentAdapter"
        assert result["parameters"] == params
        assert (result["gates_passed"], result["hard_gates_passed"], result["soft_gate_failures"]) == (True, True, 0)
        assert result["gate_results"] == []
        [placeholder] = result["score_results"]
        assert placeholder["scorer_name"] == "unscored_submission"
        assert (placeholder["score"], placeholder["max_score"], placeholder["passed"]) == (0.0, 0.0, True)
        assert placeholder["details"] == {"unscored_submission": True}
        assert (result["final_score"], result["max_possible_score"]) == (0.0, 100.0)
        assert isinstance(result["execution_time_seconds"], float)
        assert result["status"] == "completed"
        provenance = result["provenance"]
        assert provenance["agent"] == meta["agent_config"]
        assert provenance["sandbox"] == SANDBOX_PROVENANCE[sandbox]
        # Which client made it, in a field of its own: framework_version stays the official client's.
        assert provenance["client"] == {"name": "asibench-portal-cli", "version": CLIENT_VERSION}
        assert provenance["runtime"]["runtime_source"] == "host_process"
        assert provenance["runtime"]["packages"] == task["_runtime_packages"]
        assert provenance["inputs"] == {"scheme": "asibench-inputs-v1",
                                        "digest": instance_dir_input_digest(instances / instance_id)}

        output = result["agent_output"]
        names = [o["name"] for o in declared_outputs(task)]
        assert output["code_files"] + output["data_files"] == [n for n in names if n.endswith(".py")] + [
            n for n in names if not n.endswith(".py")]
        assert (output["status"], output["process_exit_code"], output["termination_signal"],
                output["timeout_phase"], output["error_message"]) == ("completed", 0, None, None, None)
        assert output["raw_stdout_file"] == f"{stem}.agent_stdout.log"
        assert (out / task_id / output["raw_stdout_file"]).is_file()
        assert output["model_call_observability"]["capture_status"] == "not_supported"
        persisted = output["persisted_outputs"]
        assert persisted["dir"] == f"{stem}.outputs"
        assert [f["path"] for f in persisted["files"]] == output["code_files"] + output["data_files"]
        for entry in persisted["files"]:
            copy = out / task_id / persisted["dir"] / entry["path"]
            assert entry == {"path": entry["path"], "sha256": sha256(copy), "bytes": copy.stat().st_size}
        assert sorted(p.name for p in (out / task_id / persisted["dir"]).iterdir()) == sorted(names)

        info = load(out / "instances" / instance_id / "framework_task_info.json")
        assert info == {"schema_version": 3, "task_id": anonymised_task_id(task_id), "prompt_level": "b1",
                        "expected_outputs": [{"name": o["name"], "type": o["type"] or "data"}
                                             for o in declared_outputs(task)],
                        "timeout_seconds": 10800, "instance_id": instance_id, "parameters": params}
        text = (out / task_id / f"{stem}.json").read_text()
        assert str(out) not in text and "/tmp/ai4sci_ws_" not in text


def workspace_probe(tmp_path: Path, sandbox: str) -> tuple[Path, dict[str, str]]:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.probe", ["seen_info.json", "listing.txt", "env.txt"], ("b1", "b2"))
    out = tmp_path / "out"
    cmd = ("cp task_info.json seen_info.json && ls -A > listing.txt && "
           "{{ pwd; echo HOME=$HOME; echo SANDBOX=${{AI4SCI_SANDBOX:-}}; echo TOKEN=${{ASIBENCH_SUBMIT_TOKEN:-}}; "
           "echo LEVEL={prompt_level}; cat prompt.md; }} > env.txt")
    env = {**cli_env(tmp_path / "home"), "ASIBENCH_SUBMIT_TOKEN": "asi_pat_secret_never_for_agents"}
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", cmd, "--sandbox", sandbox,
                "--prompt-levels", "b2", "--output-dir", str(out), "--tasks-dir", str(tmp_path / "no_catalog")], env)
    assert done.returncode == 0, done.stderr
    stem = out / "demo.probe" / "demo.probe__seed31415__b2"
    return stem, {p.name: p.read_text() for p in Path(f"{stem}.outputs").iterdir()}


@pytest.mark.parametrize("sandbox", ["none", "linux_ns"])
def test_the_agent_sees_only_the_workspace_contract(tmp_path: Path, sandbox: str) -> None:
    stem, files = workspace_probe(tmp_path, sandbox)
    info = json.loads(files["seen_info.json"])
    assert info == {"schema_version": 3, "task_id": anonymised_task_id("demo.probe"), "prompt_level": "b2",
                    "expected_outputs": [{"name": n, "type": "data"}
                                         for n in ("seen_info.json", "listing.txt", "env.txt")],
                    "timeout_seconds": 10800}
    assert files["listing.txt"].split() == ["data", "listing.txt", "prompt.md", "seen_info.json", "task_info.json"]
    lines = files["env.txt"].splitlines()
    workspace = lines[0]
    assert workspace.startswith(tempfile_root()) and workspace.endswith("/workspace")
    assert "TOKEN=" in lines and "LEVEL=b2" in lines and "prompt b2" in lines
    if sandbox == "linux_ns":
        assert f"HOME={workspace}" in lines and "SANDBOX=1" in lines
    assert not Path(workspace).exists(), "the temporary workspace is removed after the run"
    result = load(Path(f"{stem}.json"))
    assert "runtime" not in result["provenance"], "a task outside the catalog has no runtime provenance"


def tempfile_root() -> str:
    import tempfile

    return tempfile.gettempdir() + "/ai4sci_ws_"


@pytest.mark.parametrize("sandbox", ["none", "linux_ns", "os"])
def test_a_timeout_kills_the_agent_and_all_its_children(tmp_path: Path, sandbox: str) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.sleepy", ["never.txt"])
    marker = f"98765{ {'none': 4, 'linux_ns': 3, 'os': 2}[sandbox] }"
    # os: the container on the engine at DOCKER_HOST (make test), in the scoring image.
    container = ["--image", "asibench-scoring:1.0.0", "--network", "none"] if sandbox == "os" else []
    # A background child, one that escapes the process group with setsid, and a foreground sleep.
    cmd = f"sleep {marker}1 & setsid sleep {marker}2 & sleep {marker}3"
    started = time.monotonic()
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", cmd, "--sandbox", sandbox, *container,
                "--prompt-levels", "b1", "--timeout", "2", "--output-dir", str(tmp_path / "out")],
               cli_env(tmp_path / "home"))
    assert done.returncode == ExitStatus.ERROR, done.stderr
    assert "Error: No agent run completed (0 failed, 1 timed out)" in done.stderr
    assert time.monotonic() - started < 30
    result = load(tmp_path / "out" / "demo.sleepy" / "demo.sleepy__seed31415__b1.json")
    assert result["status"] == "timeout"
    output = result["agent_output"]
    assert (output["status"], output["timeout_phase"], output["termination_signal"], output["process_exit_code"]) == (
        "timeout", "process_execution", 9, None)
    assert "timed out after 2s" in output["error_message"]
    assert "persisted_outputs" not in output and output["data_files"] == []
    wait_for(lambda: host_pids_with(marker) == [], 5, f"every process of {marker} to be gone")


def test_a_rerun_skips_complete_results_and_redoes_broken_ones(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.resume", ["out.txt"], ("b1", "b2", "b3"))
    out = tmp_path / "out"
    args = ["run", "--instances-dir", str(instances), "--agent-cmd", "date +%s%N > out.txt",
            "--prompt-levels", "b1,b2,b3", "--output-dir", str(out)]
    env = cli_env(tmp_path / "home")
    assert cli(args, env).returncode == 0
    task_out = out / "demo.resume"
    first = snapshot(task_out)

    again = cli(args, env)
    assert again.returncode == 0 and "(3 already done)" in again.stdout
    assert snapshot(task_out) == first

    (task_out / "demo.resume__seed31415__b2.json").write_text('{"result_schema_version": 1, "instance_')
    (task_out / "demo.resume__seed31415__b3.outputs" / "out.txt").unlink()
    third = cli(args, env)
    assert third.returncode == 0 and "(1 already done)" in third.stdout
    after = snapshot(task_out)
    assert after["demo.resume__seed31415__b1.json"] == first["demo.resume__seed31415__b1.json"]
    for level in ("b2", "b3"):
        result = load(task_out / f"demo.resume__seed31415__{level}.json")
        assert result["status"] == "completed"
        copy = task_out / f"demo.resume__seed31415__{level}.outputs" / "out.txt"
        assert result["agent_output"]["persisted_outputs"]["files"] == [
            {"path": "out.txt", "sha256": sha256(copy), "bytes": copy.stat().st_size}]


def test_the_exit_status_says_whether_every_some_or_no_agent_run_completed(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.exits", ["out.txt"], ("b1", "b2"))
    env = cli_env(tmp_path / "home")

    def run(cmd: str, name: str) -> subprocess.CompletedProcess[str]:
        return cli(["run", "--instances-dir", str(instances), "--agent-cmd", cmd, "--prompt-levels", "b1,b2",
                    "--output-dir", str(tmp_path / name)], env)

    every = run("echo ok > out.txt", "every")
    assert every.returncode == ExitStatus.OK, every.stderr
    assert "2 runs: 2 completed, 0 failed, 0 timed out" in every.stdout and "Error" not in every.stderr

    some = run("echo ok > out.txt; test {prompt_level} = b1", "some")
    assert some.returncode == ExitStatus.RUNS_INCOMPLETE == 3, some.stderr
    assert "Error: 1 of 2 agent runs did not complete (1 failed, 0 timed out); agent_output.error_message" in \
        some.stderr and "The other results are written and can be submitted." in some.stderr
    statuses = {level: load(tmp_path / "some" / "demo.exits" / f"demo.exits__seed31415__{level}.json")["status"]
                for level in ("b1", "b2")}
    assert statuses == {"b1": "completed", "b2": "failed"}

    none = run("exit 4", "none")
    assert none.returncode == ExitStatus.ERROR == 1, none.stderr
    assert "Error: No agent run completed (2 failed, 0 timed out)" in none.stderr
    assert len(list((tmp_path / "none" / "demo.exits").glob("*.json"))) >= 2, "every result is still written"

    # A rerun that resumes them all keeps the status: the results, not this process, decide it.
    assert run("echo ok > out.txt", "every").returncode == ExitStatus.OK


def test_attempts_get_fresh_workspaces_and_attempt_files(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.retry", ["count.txt"])
    out = tmp_path / "out"
    cmd = "echo x >> count.txt; pwd >> count.txt; exit 3"
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", cmd,
                "--prompt-levels", "b1", "--attempts", "2", "--output-dir", str(out)], cli_env(tmp_path / "home"))
    assert done.returncode == ExitStatus.ERROR and "No agent run completed (2 failed, 0 timed out)" in done.stderr
    task_out = out / "demo.retry"
    first, second = (load(task_out / name) for name in ("demo.retry__seed31415__b1.json",
                                                          "demo.retry__seed31415__b1__attempt2.json"))
    assert (first["attempt"], second["attempt"]) == (1, 2)
    for result in (first, second):
        assert result["status"] == "failed"
        assert result["agent_output"]["process_exit_code"] == 3
        assert result["agent_output"]["error_message"] == "CLIAgentAdapter exited with code 3"
    lines = (task_out / "demo.retry__seed31415__b1__attempt2.outputs" / "count.txt").read_text().split()
    assert lines[0] == "x" and len(lines) == 2 and lines[1].endswith("/workspace_attempt2")
    assert second["agent_output"]["persisted_outputs"]["dir"] == "demo.retry__seed31415__b1__attempt2.outputs"


def test_linux_ns_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.escape", ["report.txt"])
    guarded = tmp_path / "guarded"
    guarded.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(guarded, 0o777)  # writable by anyone on the host: only the mount stops the agent
    targets = [guarded / "mounted_ro.txt", instances / "demo.escape__seed31415" / "data" / "planted.txt",
               tmp_path / "outside.txt", Path("/etc/planted.txt"), Path("/usr/planted.txt"),
               REPO / "tasks" / "planted.txt"]
    probes = " ".join(
        f"if echo x > {t} 2>/dev/null; then echo WROTE {t}; else echo DENIED {t}; fi;" for t in targets)
    cmd = (f"{{{{ {probes} ls {instances}/demo.escape__seed31415/reference >/dev/null 2>&1 "
           f"&& echo SAW_REFERENCE || echo NO_REFERENCE; echo x > /tmp/private.txt && echo TMP_OK; }}}} > report.txt")
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", cmd, "--sandbox", "linux_ns",
                "--ro-mount", str(guarded), "--prompt-levels", "b1", "--output-dir", str(tmp_path / "out")],
               cli_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "out" / "demo.escape" / "demo.escape__seed31415__b1.outputs" / "report.txt").read_text()
    for target in targets:
        assert not target.exists()
        # Under /tmp a write lands in the sandbox's private tmpfs; everywhere else it is refused.
        if not str(target).startswith("/tmp/") or target.parent == guarded:
            assert f"DENIED {target}" in report
    assert "NO_REFERENCE" in report and "TMP_OK" in report
    assert not Path("/tmp/private.txt").exists()


def test_it_refuses_a_bad_template_and_writes_nothing(tmp_path: Path) -> None:
    instances = make_instances(tmp_path)
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", "echo {workspace} {model}",
                "--output-dir", str(tmp_path / "out")], cli_env(tmp_path / "home"))
    assert done.returncode == 1
    assert "--agent-cmd is not a valid template" in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_agent_is_named_from_its_config(base: Path, tmp_path: Path) -> None:
    instances = make_instances(base)
    out = tmp_path / "named"
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", AGENTS["naive"], "--sandbox", "none",
                "--prompt-levels", "b1", "--output-dir", str(out),
                "--agent-config", '{"name": "naive-baseline", "model": "demo-model"}'], cli_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert load(out / "run_metadata.json")["agent_config"]["agent_name"] == "naive-baseline"
    result = load(out / TASK_IDS[0] / f"{TASK_IDS[0]}__seed31415__b1.json")
    assert result["provenance"]["agent"]["agent_name"] == "naive-baseline"


DEEP_AGENT = '''
import os, sys
keep = sys.argv[1]
with open("out.txt", "w") as f:
    f.write("done\\n")
# A chain deeper than Python's recursion limit and far longer than PATH_MAX, with transients at the bottom.
fd = os.open(".", os.O_RDONLY)
for _ in range(1200):
    os.mkdir("d" * 200, dir_fd=fd)
    deeper = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = deeper
os.mkdir("__pycache__", dir_fd=fd)
os.close(os.open("__pycache__/x.pyc", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
os.close(os.open("stale.pyc", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
os.close(fd)
# Transient names that are links to the user's own files: the links go, never what they point at.
os.symlink(keep, "__pycache__")
os.symlink(os.path.join(keep, "precious.pyc"), "stray.pyc")
'''


def test_an_agent_leaving_a_chain_deeper_than_path_max_is_recorded_and_cleaned_up(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.deep", ["out.txt"])
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.pyc").write_bytes(b"mine")
    (keep / "notes.txt").write_text("mine")
    agent = tmp_path / "deep_agent.py"
    agent.write_text(DEEP_AGENT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**cli_env(tmp_path / "home"), "TMPDIR": str(scratch)}
    try:
        done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", f"python {agent} {keep}",
                    "--prompt-levels", "b1", "--output-dir", str(tmp_path / "out")], env)
        left = list(scratch.iterdir())
    finally:
        tree_remove(scratch)  # whatever the run left: deeper than pytest's own clean-up can remove
    assert done.returncode == 0, done.stderr
    result = load(tmp_path / "out" / "demo.deep" / "demo.deep__seed31415__b1.json")
    assert result["status"] == "completed", result
    assert (tmp_path / "out" / "demo.deep" / "demo.deep__seed31415__b1.outputs" / "out.txt").read_text() == "done\n"
    assert left == []
    assert sorted(p.name for p in keep.iterdir()) == ["notes.txt", "precious.pyc"]


def test_a_kept_workspace_loses_its_transients_at_any_depth_and_never_what_a_link_points_at(tmp_path: Path) -> None:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.deepkeep", ["out.txt"])
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.pyc").write_bytes(b"mine")
    agent = tmp_path / "deep_agent.py"
    agent.write_text(DEEP_AGENT)
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    scratch.mkdir()
    env = {**cli_env(tmp_path / "home"), "TMPDIR": str(scratch)}
    try:
        done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", f"python {agent} {keep}",
                    "--prompt-levels", "b1", "--keep-workspaces", "--output-dir", str(out)], env)
        assert done.returncode == 0, done.stderr
        workspace = out / "instances" / "_workspaces" / "demo.deepkeep__seed31415" / "workspace_b1"
        fd = os.open(workspace, os.O_RDONLY)
        assert sorted(os.listdir(fd)) == sorted(["__pycache__", "d" * 200, "out.txt", "prompt.md", "task_info.json",
                                                 "data"])  # the stray.pyc link went, the __pycache__ link stays
        for _ in range(1200):
            deeper = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        assert os.listdir(fd) == []
        os.close(fd)
    finally:
        tree_remove(scratch)  # the chain is deeper than pytest's own clean-up can remove
    assert sorted(p.name for p in keep.iterdir()) == ["precious.pyc"]
