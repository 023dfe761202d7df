"""Helpers for tests that drive real processes: the CLI clients and the browser."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUR_CLI = [sys.executable, "-m", "cli_client"]


def run_cli(argv: list[str], env: dict[str, str], stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def issue_token(user: object, name: str = "cli") -> str:
    from portal.accounts.services import cli_token_create

    return cli_token_create(user=user, name=name).plaintext  # type: ignore[arg-type]


def read_archive_members(data: bytes) -> dict[str, bytes]:
    """Every regular file of a small tar.gz held in memory."""
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


SUBMIT_TASKS = ("chemistry.counterpoise_cbs_energies", "robotics.minimum_snap_trajectory")
REFERENCE_AGENT = f"python {REPO}/examples/agents/reference_agent.py --workspace {{workspace}}"
NAIVE_AGENT = f"python {REPO}/examples/agents/naive_agent.py --workspace {{workspace}}"


def cli_env(home: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASIBENCH_", "AI4SCI_"))}
    env.update(NO_COLOR="1", HOME=str(home), ASIBENCH_NO_BROWSER="1", ASIBENCH_CREDENTIALS_DIR=str(home / "creds"))
    home.mkdir(parents=True, exist_ok=True)
    return env


def extract_instances(dataset: str, task_ids: tuple[str, ...], dest: Path) -> Path:
    """The catalog's public instance archives, unpacked as `task pull` would (no HTTP)."""
    import tarfile

    from django.core.files.storage import default_storage

    from scoring.models import Instance

    dest.mkdir(parents=True, exist_ok=True)
    for instance in Instance.objects.filter(dataset_id=dataset, task_id__in=task_ids):
        with default_storage.open(instance.input_archive, "rb") as handle, tarfile.open(
            fileobj=handle, mode="r:gz"
        ) as tar:
            tar.extractall(dest, filter="data")
    return dest


def agent_results(instances: Path, out: Path, agent_cmd: str, levels: str = "b1,b2,b3,b4",
                  sandbox: str = "linux_ns", config: str = '{"model": "demo-model", "effort": "high"}') -> Path:
    """`asibench run` of an example agent: a real results dir in the contract's layout."""
    args = [*OUR_CLI, "run", "--instances-dir", str(instances), "--agent-cmd", agent_cmd, "--sandbox", sandbox,
            "--prompt-levels", levels, "--output-dir", str(out), "--agent-config", config]
    if sandbox == "linux_ns":
        args += ["--ro-mount", str(REPO / "examples"), "--ro-mount", str(REPO / "tasks")]
    done = run_cli(args, cli_env(out.parent / "home"), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def bundle_of(results: Path, archive: Path) -> Path:
    done = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--no-upload", "--output", str(archive)],
                   cli_env(archive.parent / "home"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOT SUBMITTED" in done.stdout
    return archive
