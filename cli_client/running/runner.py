"""`asibench run` over pre-generated instances: plan, prepare workspaces, run, record (contract §5).

The instances dir is only read. Per (instance, level, attempt) the runner builds a fresh
temporary workspace, runs the agent command, persists the declared outputs and writes the
result JSON last (atomically), so an existing, consistent result file means that unit of
work is done and a rerun skips it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli_client import CLIENT_NAME, CLIENT_VERSION
from cli_client.errors import CliError
from cli_client.running import run_records as records
from cli_client.running.agent_exec import (
    OS_NETWORKS,
    AgentRun,
    linux_ns_mounts,
    os_image_identity,
    run_linux_ns,
    run_os,
    run_unsandboxed,
)
from cli_client.running.trajectory import (
    INLINE_CALL_RECORDS,
    TRAJECTORY_FILE,
    Trajectory,
    final_output_versions,
    log_tail,
    trajectory_of,
)
from contracts import PROMPT_LEVELS
from contracts.client_identity import KEY as CLIENT_KEY
from contracts.client_identity import client_provenance
from contracts.digests import INPUT_DIGEST_SCHEME, instance_dir_input_digest, sha256_file
from contracts.sandbox_policy import AGENT_SANDBOXES, sandbox_provenance
from scoring.engine import TaskDefinitionError, anonymised_task_id, declared_outputs, load_task
from scoring.sandbox import SandboxError
from scoring.sandbox.limits import AGENT_OUTPUT_CAP
from scoring.sandbox.process import TreeRemovalError, tree_prune, tree_remove

SANDBOXES = AGENT_SANDBOXES
STATUSES = ("completed", "failed", "timeout")
AGENT_MEMORY_FILES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", ".claude")
TRANSIENT_DIRS = (".venv", "__pycache__", ".mplconfig", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                  ".ipynb_checkpoints")
TRANSIENT_GLOBS = (".DS_Store", "*.pyc", "*.pyo")
PLACEHOLDERS = ("workspace", "prompt_file", "prompt_level", "task_id", "instance_id")


@dataclass(frozen=True)
class RunOptions:
    instances_dir: Path
    output_dir: Path
    agent_cmd: str
    sandbox: str = "none"
    tasks_dir: Path = Path("tasks")
    tasks: tuple[str, ...] = ()
    prompt_levels: tuple[str, ...] = PROMPT_LEVELS
    timeout: int = 10800
    attempts: int = 1
    ro_mounts: tuple[Path, ...] = ()
    pass_env: tuple[str, ...] = ()
    keep_workspaces: bool = False
    agent_config: dict[str, Any] = field(default_factory=dict)
    image: str | None = None
    """--sandbox os: the container image the agent runs in."""
    network: str | None = None
    """--sandbox os: none | bridge, always chosen explicitly."""


@dataclass(frozen=True)
class Instance:
    task_id: str
    instance_id: str
    path: Path
    task: dict[str, Any] | None
    """The catalog task (load_task) when --tasks-dir has it, else None."""
    expected_outputs: list[dict[str, str]]
    parameters: dict[str, Any]
    input_digest: str
    """Digest of the prompts and data/ the agent is given (digests.input_digest), for provenance."""


@dataclass(frozen=True)
class WorkItem:
    instance: Instance
    level: str
    attempt: int

    @property
    def stem(self) -> str:
        base = f"{self.instance.instance_id}__{self.level}"
        return base if self.attempt == 1 else f"{base}__attempt{self.attempt}"


@dataclass(frozen=True)
class Outcome:
    item: WorkItem
    status: str
    seconds: float
    outputs_found: int
    skipped: bool = False


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def find_catalog_task(tasks_dir: Path, task_id: str) -> dict[str, Any] | None:
    """The task with this id: `<tasks>/<domain>/<name>/` first, else a scan of the catalog."""
    if not tasks_dir.is_dir():
        return None
    candidates = [tasks_dir.joinpath(*task_id.split("."))]
    candidates += sorted({p.parent for pattern in ("*/*/task_meta.yaml", "*/*/task.yaml")
                          for p in tasks_dir.glob(pattern)})
    for candidate in candidates:
        if candidate.name == "_template" or not candidate.is_dir():
            continue
        try:
            task = load_task(candidate)
        except TaskDefinitionError:
            continue
        if str(task.get("id")) == task_id:
            return task
    return None


def _normalise_outputs(entries: Any) -> list[dict[str, str]]:
    out = []
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name"):
            out.append({"name": str(entry["name"]), "type": str(entry.get("type") or "data")})
    return out


def discover_instances(options: RunOptions) -> list[Instance]:
    root = options.instances_dir
    if not root.is_dir():
        raise CliError(f"Instances directory not found: {root}")
    wanted = set(options.tasks)
    tasks: dict[str, dict[str, Any] | None] = {}
    instances: list[Instance] = []
    for path in sorted(root.iterdir()):
        task_id, sep, _ = path.name.partition("__")
        if not path.is_dir() or not sep or "." not in task_id or (wanted and task_id not in wanted):
            continue
        if task_id not in tasks:
            tasks[task_id] = find_catalog_task(options.tasks_dir, task_id)
        task = tasks[task_id]
        if task is not None:
            expected = _normalise_outputs(declared_outputs(task))
        else:
            info = _read_json(path / "task_info.json")
            if not isinstance(info, dict) or not isinstance(info.get("expected_outputs"), list):
                raise CliError(
                    f"Task {task_id} is not in {options.tasks_dir} and instance {path.name} has no "
                    "task_info.json with expected_outputs; pass --tasks-dir with the task catalog."
                )
            expected = _normalise_outputs(info["expected_outputs"])
        meta = _read_json(path / "instance_meta.json")
        params = meta.get("params_used") if isinstance(meta, dict) else None
        for level in options.prompt_levels:
            if not (path / f"prompt_{level}.md").is_file():
                raise CliError(f"Instance {path.name} has no prompt_{level}.md.")
        instances.append(Instance(task_id, path.name, path, task, expected,
                                  params if isinstance(params, dict) else {}, instance_dir_input_digest(path)))
    missing = wanted - {i.task_id for i in instances}
    if missing:
        raise CliError(f"No instances for {', '.join(sorted(missing))} in {root}")
    if not instances:
        raise CliError(f"No instance directories (<domain>.<task>__<suffix>) found in {root}")
    return instances


def validate_options(options: RunOptions) -> None:
    if options.sandbox not in SANDBOXES:
        raise CliError(f"--sandbox must be one of {', '.join(SANDBOXES)} for --agent-cmd")
    bad = [lvl for lvl in options.prompt_levels if lvl not in PROMPT_LEVELS]
    if bad or not options.prompt_levels:
        raise CliError(f"--prompt-levels must be a comma list of {', '.join(PROMPT_LEVELS)}")
    if options.timeout <= 0 or options.attempts < 1:
        raise CliError("--timeout must be positive and --attempts at least 1")
    try:
        options.agent_cmd.format(**{name: "x" for name in PLACEHOLDERS})
    except (KeyError, IndexError, ValueError) as exc:
        raise CliError(
            f"--agent-cmd is not a valid template ({exc!r}); placeholders: "
            f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}; double literal braces"
        ) from None
    if options.sandbox in ("linux_ns", "os") and options.agent_config.get("cwd"):
        raise CliError(f"agent config `cwd` is not supported with --sandbox {options.sandbox} "
                       "(the workspace is the cwd)")
    if options.sandbox == "os":
        if not options.image:
            raise CliError("--sandbox os needs --image (the container image the agent runs in)")
        if options.network not in OS_NETWORKS:
            raise CliError("--sandbox os needs an explicit --network: none (no network) or bridge "
                           "(the engine's NAT, e.g. to reach a model provider)")
    elif options.image or options.network:
        raise CliError("--image and --network apply only to --sandbox os")
    resolved_out = options.output_dir.resolve()
    resolved_in = options.instances_dir.resolve()
    if resolved_out == resolved_in or resolved_in in resolved_out.parents:
        raise CliError("--output-dir must not be inside --instances-dir (the instances dir is never written)")
    for mount in options.ro_mounts:
        if not mount.exists():
            raise CliError(f"--ro-mount path does not exist: {mount}")


def task_info(instance: Instance, level: str, timeout: int) -> dict[str, Any]:
    return {"schema_version": 3, "task_id": anonymised_task_id(instance.task_id), "prompt_level": level,
            "expected_outputs": instance.expected_outputs, "timeout_seconds": timeout}


def prepare_workspace(item: WorkItem, timeout: int) -> Path:
    """A fresh `<tmp>/ai4sci_ws_XXXX/workspace[_attempt<N>]` holding prompt.md, task_info.json, data/."""
    name = "workspace" if item.attempt == 1 else f"workspace_attempt{item.attempt}"
    workspace = Path(tempfile.mkdtemp(prefix="ai4sci_ws_")) / name
    workspace.mkdir()
    data = item.instance.path / "data"
    if data.is_dir():
        shutil.copytree(data, workspace / "data", symlinks=False)
    shutil.copyfile(item.instance.path / f"prompt_{item.level}.md", workspace / "prompt.md")
    (workspace / "task_info.json").write_text(
        json.dumps(task_info(item.instance, item.level, timeout), indent=2), encoding="utf-8")
    for leftover in AGENT_MEMORY_FILES:
        path = workspace / leftover
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    return workspace


def agent_command(template: str, workspace: Path, item: WorkItem) -> str:
    values = {"workspace": str(workspace), "prompt_file": str(workspace / "prompt.md"),
              "prompt_level": item.level, "task_id": item.instance.task_id,
              "instance_id": item.instance.instance_id}
    return template.format(**{k: shlex.quote(v) for k, v in values.items()})


def clean_transients(workspace: Path) -> None:
    # The agent wrote this tree: it may be deeper than any path can name, or hold links anywhere.
    tree_prune(workspace, TRANSIENT_DIRS, TRANSIENT_GLOBS)


def persist_outputs(workspace: Path, recorded: list[str], task_out: Path, stem: str) -> dict[str, Any] | None:
    """Copy recorded outputs to `<stem>.outputs/` with sha256/bytes (contract §5.5)."""
    if not recorded:
        return None
    dest_root = task_out / f"{stem}.outputs"
    if dest_root.exists():
        shutil.rmtree(dest_root)
    files: list[dict[str, Any]] = []
    root = workspace.resolve()
    for rel in recorded:
        src = (workspace / rel).resolve()
        if src != root and root not in src.parents:
            files.append({"path": rel, "missing": True, "reason": "path_escape"})
            continue
        if not src.is_file():
            files.append({"path": rel, "missing": True})
            continue
        dest = dest_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        files.append({"path": rel, "sha256": sha256_file(dest), "bytes": dest.stat().st_size})
    if not any("sha256" in f for f in files):
        return {"dir": None, "files": files}
    return {"dir": f"{stem}.outputs", "files": files}


def result_is_complete(path: Path) -> bool:
    """A result file a rerun may keep: whole, schema 1, and its persisted outputs still on disk."""
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("result_schema_version") != records.RESULT_SCHEMA_VERSION:
        return False
    if not data.get("instance_id") or data.get("status") not in STATUSES:
        return False
    persisted = (data.get("agent_output") or {}).get("persisted_outputs")
    if isinstance(persisted, dict) and persisted.get("dir"):
        for entry in persisted.get("files") or []:
            if entry.get("missing"):
                continue
            copy = path.parent / str(persisted["dir"]) / str(entry.get("path"))
            if not copy.is_file() or copy.stat().st_size != entry.get("bytes"):
                return False
    return True


class Runner:
    """One `asibench run`; `host_env` is the environment the agent inherits (sandbox none)."""

    def __init__(self, options: RunOptions, host_env: Mapping[str, str], repo_root: Path) -> None:
        validate_options(options)
        self.options = options
        self.host_env = host_env
        self.instances = discover_instances(options)
        self.out = options.output_dir
        home = host_env.get("HOME")
        self.sanitizer = records.Sanitizer(output_dir=self.out.absolute(), repo_root=repo_root,
                                           home=Path(home) if home else None)
        self.agent_provenance = records.agent_provenance(options.agent_cmd, options.agent_config, self.sanitizer)
        self.image_identity: str | None = None
        if options.sandbox == "os":
            try:  # fail closed: no engine or no image stops the run before any agent starts
                self.image_identity = os_image_identity(str(options.image))
            except SandboxError as exc:
                raise CliError(str(exc)) from None
        self.sandbox_provenance = sandbox_provenance(options.sandbox, self.image_identity)
        if options.sandbox == "linux_ns":
            self.mounts = linux_ns_mounts(list(options.ro_mounts))
        else:
            self.mounts = [p.resolve() for p in options.ro_mounts]

    def work_items(self) -> list[WorkItem]:
        return [WorkItem(instance, level, attempt) for instance in self.instances
                for level in self.options.prompt_levels for attempt in range(1, self.options.attempts + 1)]

    def result_path(self, item: WorkItem) -> Path:
        return self.out / item.instance.task_id / f"{item.stem}.json"

    def metadata(self) -> dict[str, Any]:
        catalog = {i.task_id: i.task for i in self.instances if i.task is not None}
        return records.run_metadata(
            agent_config=self.agent_provenance,
            task_versions={tid: str(task.get("version", "unknown")) for tid, task in catalog.items()},
            sandbox=self.sandbox_provenance,
            task_runtime={tid: records.runtime_provenance(task, self.image_identity) for tid, task in catalog.items()},
        )

    def run(self, on_start: Callable[[WorkItem], None] | None = None,
            on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
        self.out.mkdir(parents=True, exist_ok=True)
        metadata = self.metadata()
        records.write_json_atomic(self.out / "run_metadata.json", metadata)
        outcomes = []
        for item in self.work_items():
            if on_start:
                on_start(item)
            outcome = self.run_item(item)
            outcomes.append(outcome)
            if on_done:
                on_done(outcome)
        final = self.metadata()
        if {k: v for k, v in final.items() if k != "timestamp"} != {
                k: v for k, v in metadata.items() if k != "timestamp"}:
            records.write_json_atomic(self.out / "run_metadata.json", final)
        return outcomes

    def run_item(self, item: WorkItem) -> Outcome:
        instance = item.instance
        info = {**task_info(instance, item.level, self.timeout), "instance_id": instance.instance_id,
                "parameters": instance.parameters}
        records.write_json_atomic(self.out / "instances" / instance.instance_id / "framework_task_info.json", info)
        result_path = self.result_path(item)
        if result_path.exists() and result_is_complete(result_path):
            data = _read_json(result_path)
            found = len((data.get("agent_output") or {}).get("code_files") or []) + len(
                (data.get("agent_output") or {}).get("data_files") or [])
            return Outcome(item, str(data.get("status")), float(data.get("execution_time_seconds") or 0.0),
                           found, skipped=True)

        workspace = prepare_workspace(item, self.timeout)
        try:
            command = agent_command(self.options.agent_cmd, workspace, item)
            if self.options.sandbox == "linux_ns":
                run = run_linux_ns(command, workspace, host_env=self.host_env, timeout=self.timeout,
                                   mounts=self.mounts, pass_env=list(self.options.pass_env))
            elif self.options.sandbox == "os":
                run = run_os(command, workspace, host_env=self.host_env, timeout=self.timeout,
                             image=str(self.options.image), network=str(self.options.network),
                             mounts=self.mounts, pass_env=list(self.options.pass_env))
            else:
                cwd = Path(self.options.agent_config["cwd"]) if self.options.agent_config.get("cwd") else workspace
                run = run_unsandboxed(command, cwd, host_env=self.host_env, timeout=self.timeout)
            recorded = [o["name"] for o in instance.expected_outputs
                        if (workspace / o["name"]).exists() or (workspace / o["name"]).is_symlink()]
            result = self.write_result(item, workspace, run, recorded)
            clean_transients(workspace)
        finally:
            self.retire_workspace(item, workspace)
        return Outcome(item, result["status"], result["execution_time_seconds"], len(recorded))

    @property
    def timeout(self) -> int:
        return int(self.options.agent_config.get("timeout") or self.options.timeout)

    def retire_workspace(self, item: WorkItem, workspace: Path) -> None:
        if not self.options.keep_workspaces:
            # Best effort as ever (the result is written), but through descriptors: the agent's tree.
            with suppress(TreeRemovalError):
                tree_remove(workspace.parent)
            return
        link_dir = self.out / "instances" / "_workspaces" / item.instance.instance_id
        link_dir.mkdir(parents=True, exist_ok=True)
        name = f"workspace_{item.level}" + ("" if item.attempt == 1 else f"_attempt{item.attempt}")
        link = link_dir / name
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.is_dir():
            shutil.rmtree(link)
        link.symlink_to(workspace)

    @staticmethod
    def trajectory(workspace: Path, model: str | None = None) -> Trajectory | None:
        """What the `_trajectory.jsonl` the agent left says it did (contract §5.8), if it left one; paths
        inside the workspace become the relative names the task declares, in the summary and the file
        history alike. A link or an oversized file is not read: the agent controls the workspace."""
        path = workspace / TRAJECTORY_FILE
        if path.is_symlink() or not path.is_file() or path.stat().st_size > AGENT_OUTPUT_CAP:
            return None
        return trajectory_of(path.read_text(encoding="utf-8", errors="replace"), workspace, model)

    def write_result(self, item: WorkItem, workspace: Path, run: AgentRun, recorded: list[str]) -> dict[str, Any]:
        task_out = self.out / item.instance.task_id
        task_out.mkdir(parents=True, exist_ok=True)
        sanitizer = self.sanitizer.for_workspace(workspace)
        stdout = run.stdout.decode("utf-8", errors="replace")
        stderr = run.stderr.decode("utf-8", errors="replace")
        status, error = self._outcome(run)
        log = records.produced_log(log_tail(stdout), log_tail(stderr), run.returncode)
        if run.timed_out or run.error:
            log = f"{error}\n\n{log}" if log else str(error)
        code_files, data_files = records.split_outputs(recorded)
        agent_output: dict[str, Any] = {
            "code_files": code_files,
            "data_files": data_files,
            "log": sanitizer.text(log),
            "error_message": sanitizer.text(error) if error else None,
            "status": status,
            "process_exit_code": run.returncode if run.returncode is not None and run.returncode >= 0 else None,
            "termination_signal": 9 if run.timed_out else (
                -run.returncode if run.returncode is not None and run.returncode < 0 else None),
            "timeout_phase": "process_execution" if run.timed_out else None,
        }
        if run.error is None:
            name = f"{item.stem}.agent_stdout.log"
            (task_out / name).write_text(sanitizer.text(stdout), encoding="utf-8")
            agent_output.update(raw_stdout_file=name, raw_stdout_format="log")
        if stderr:
            name = f"{item.stem}.agent_stderr.log"
            (task_out / name).write_text(sanitizer.text(stderr), encoding="utf-8")
            agent_output["raw_stderr_file"] = name
        agent_output["model_call_observability"] = records.model_call_observability()
        persisted = persist_outputs(workspace, recorded, task_out, item.stem)
        if persisted is not None:
            agent_output["persisted_outputs"] = persisted
        trajectory = self._record_trajectory(item, workspace, task_out, sanitizer, agent_output)
        versions = final_output_versions(persisted, trajectory.file_versions if trajectory else {})
        if versions:
            agent_output["file_versions"] = {sanitizer.text(path): v for path, v in versions.items()}

        result = {
            "result_schema_version": records.RESULT_SCHEMA_VERSION,
            "instance_id": item.instance.instance_id,
            "task_id": item.instance.task_id,
            "attempt": item.attempt,
            "prompt_level": item.level,
            "agent_name": records.ADAPTER_CLASS,
            "parameters": item.instance.parameters,
            "gates_passed": True,
            "hard_gates_passed": True,
            "soft_gate_failures": 0,
            "gate_results": [],
            "score_results": records.unscored_placeholder(),
            "final_score": 0.0,
            "max_possible_score": 100.0,
            "execution_time_seconds": float(run.seconds),
            "status": status,
            "provenance": self._provenance(item),
            "agent_output": agent_output,
        }
        if trajectory is not None and trajectory.stated_cost is not None:
            result["cost"] = trajectory.stated_cost
        records.write_json_atomic(self.result_path(item), result)
        return result

    def _outcome(self, run: AgentRun) -> tuple[str, str | None]:
        """The result's status and error message, as the official client words them."""
        if run.timed_out:
            return "timeout", (f"{records.ADAPTER_CLASS} timed out after {self.timeout}s "
                               "(process tree force-killed via SIGKILL)")
        if run.error is not None:
            return "failed", run.error
        if run.returncode == 0:
            return "completed", None
        return "failed", f"{records.ADAPTER_CLASS} exited with code {run.returncode}"

    def _record_trajectory(self, item: WorkItem, workspace: Path, task_out: Path, sanitizer: records.Sanitizer,
                           agent_output: dict[str, Any]) -> Trajectory | None:
        """The agent's trajectory, when it left one: its steps and model-call records written beside the result,
        their summaries into `agent_output`."""
        model = self.options.agent_config.get("model")
        trajectory = self.trajectory(workspace, str(model) if model else None)
        if trajectory is None:
            return None
        if trajectory.summary is not None:
            agent_output["trajectory_summary"] = sanitizer.value(trajectory.summary)
        name = f"{item.stem}.trajectory.json"
        records.write_json_atomic(task_out / name, sanitizer.value(trajectory.steps))
        agent_output["trajectory_file"] = name
        if trajectory.calls:
            # As the official client does: the records in a sidecar, their summary in the result. The bundle
            # carries no sidecar, so the result also holds the records (up to INLINE_CALL_RECORDS) for the Portal.
            calls = sanitizer.value(trajectory.calls)
            name = f"{item.stem}.model_calls.json"
            records.write_json_atomic(task_out / name, calls)
            agent_output["model_call_observability"] = records.model_call_observability(calls, name)
            if len(calls) <= INLINE_CALL_RECORDS:
                agent_output["model_call_records"] = calls
        return trajectory

    def _provenance(self, item: WorkItem) -> dict[str, Any]:
        provenance: dict[str, Any] = {"agent": self.agent_provenance, "sandbox": self.sandbox_provenance,
                                      CLIENT_KEY: client_provenance(CLIENT_NAME, CLIENT_VERSION)}
        # Ties these outputs to the inputs they were made from; the Portal compares it with its own.
        provenance["inputs"] = {"scheme": INPUT_DIGEST_SCHEME, "digest": item.instance.input_digest}
        if item.instance.task is not None:
            provenance["runtime"] = records.runtime_provenance(item.instance.task, self.image_identity)
        return provenance
