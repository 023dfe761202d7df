"""Results trees as `asibench run` writes them (contract §5.3-5.6), built in place for bundle tests."""

import hashlib
import json
from pathlib import Path
from typing import Any

OS_SANDBOX = {
    "requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
    "verification_status": "docker_container", "image_identity": "sha256:" + "4e7d" * 16,
}
LINUX_NS_SANDBOX = {
    "requested_mode": "linux_ns", "effective_mode": "linux_ns", "enforcement_status": "fail_closed",
    "verification_status": "linux_namespace", "image_identity": None,
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_result(
    results: Path,
    instance_id: str,
    level: str,
    outputs: dict[str, bytes],
    *,
    task_id: str | None = None,
    attempt: int = 1,
    status: str = "completed",
    sandbox: dict[str, Any] | None = OS_SANDBOX,
    missing: tuple[str, ...] = (),
    base_name: str | None = None,
) -> str:
    """One result as `asibench run` writes it (contract §5.3-5.6): JSON, persisted outputs, task info."""
    task_id = task_id or instance_id.split("__")[0]
    base = base_name or (f"{instance_id}__{level}" + (f"__attempt{attempt}" if attempt > 1 else ""))
    task_dir = results / task_id
    files: list[dict[str, Any]] = []
    for name, data in outputs.items():
        target = task_dir / f"{base}.outputs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files.append({"path": name, "sha256": sha(data), "bytes": len(data)})
    files += [{"path": name, "missing": True} for name in missing]
    provenance: dict[str, Any] = {"agent": {"agent_name": "codex_cli", "adapter_class": "CodexCLIAdapter",
                                            "tool_mode": "restricted", "config": {"api_key": "<redacted>"}}}
    if sandbox is not None:
        provenance["sandbox"] = sandbox
    result = {
        "result_schema_version": 1, "instance_id": instance_id, "task_id": task_id, "attempt": attempt,
        "prompt_level": level, "agent_name": "CodexCLIAdapter", "parameters": {}, "final_score": 99.5,
        "score_results": [{"scorer_name": "self_reported", "score": 99.5}], "status": status,
        "execution_time_seconds": 12.5, "provenance": provenance,
        "agent_output": {"status": status, "persisted_outputs": {"dir": f"{base}.outputs", "files": files}},
    }
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / f"{base}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    (task_dir / f"{base}.model_calls.json").write_text("[]", encoding="utf-8")
    (task_dir / f"{base}.trajectory.json").write_text('{"task_id": "x", "instance_id": "y"}', encoding="utf-8")
    (task_dir / f"{base}.agent_stderr.log").write_text("secret log", encoding="utf-8")
    info_dir = results / "instances" / instance_id
    info_dir.mkdir(parents=True, exist_ok=True)
    (info_dir / "framework_task_info.json").write_text(
        json.dumps({"schema_version": 3, "task_id": "task_3f9a0c1b7d2e", "instance_id": instance_id}),
        encoding="utf-8")
    return base


def make_results(root: Path, **overrides: Any) -> Path:
    """A seed42 run of math.roots_demo at b3 (complete), b4 (timeout, one missing output) and a b3 retry."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0", "git_commit": "abc1234"}))
    (root / "eval_config.json").write_text(json.dumps({"task_id": "x", "instance_id": "y"}))
    iid = "math.roots_demo__seed42"
    write_result(root, iid, "b3", {"roots.npy": b"\x93NUMPY" + bytes(range(200)), "solve.py": b"print(1)\n",
                                   "nested/manifest.json": b'{"agent": "file"}'}, **overrides)
    write_result(root, iid, "b4", {"solve.py": b"print(2)\n"}, status="timeout", missing=("roots.npy",),
                 **overrides)
    write_result(root, iid, "b3", {"roots.npy": b"\x93NUMPY" + bytes(100), "solve.py": b"print(3)\n"},
                 attempt=2, **overrides)
    return root
