"""agent_judge: the `codex` or `claude` CLI judging a result in a workspace of its own, isolated.

The workspace is what the contract describes (`agent_output/`, `reference/` if any,
`JUDGE_INSTRUCTIONS.md`; the judge writes `score.json`), but copied, not linked, and the CLI runs
in the bubblewrap sandbox (`scoring.sandbox.bwrap`): a read-only system, no host files beyond the
CLI's own install, the workspace the only writable path, a cleared environment holding its own
key and nothing else, and no network but loopback. Its one way out is `egress.EgressProxy`,
reached through `egress_bridge` inside, which connects only to the CLI's endpoint. What the
workspace holds is checked against the manifest the scorer computed in the scoring sandbox.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.engine.scorers.judges import file_manifest
from scoring.sandbox import SandboxBackend, SandboxError
from scoring.sandbox.limits import AGENT_JUDGE_MIN_MEMORY_BYTES, agent_judge_limits
from scoring.sandbox.outputs import UnsafeOutput, collect_outputs, read_output_file
from scoring.sandbox.runtime import python_runtime_env

from .client import JudgeUnavailable
from .egress import EgressProxy, allowed_destination
from .settings import AgentJudgeSettings

CLI_NAMES = {"codex": "codex", "claude_code": "claude"}
# The official tool-isolation flags (ai4sci_bench.adapters): what restricted/search runs may use.
CLAUDE_CORE_TOOLS = ("Bash,Read,Write,Edit,Glob,Grep,TodoWrite,Agent,NotebookEdit,ToolSearch,Monitor,TaskOutput,"
                     "TaskStop,EnterWorktree,ExitWorktree")
CLAUDE_SEARCH_TOOLS = CLAUDE_CORE_TOOLS + ",WebSearch,WebFetch"
CODEX_RESTRICTED_DISABLE_FEATURES = ("plugins", "tool_call_mcp_elicitation", "skill_mcp_dependency_install",
                                     "image_generation", "codex_hooks", "computer_use")
BRIDGE_PORT = 18080
SCORE_FILE = "score.json"


@dataclass(frozen=True)
class AgentCli:
    """One judge CLI as the worker runs it: the executable, its endpoint, and its key."""

    agent: str
    executable: Path
    base_url: str
    key_env: str
    api_key: str = field(repr=False)

    def environment(self, proxy: str) -> dict[str, str]:
        """All the sandbox's variables besides the base ones: the proxy, the endpoint, the key."""
        env = {"HTTPS_PROXY": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "http_proxy": proxy,
               "NO_PROXY": "", "no_proxy": ""}
        if self.agent == "codex":
            return {**env, "OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key,
                    "CODEX_API_KEY": self.api_key}
        return {**env, "ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": self.api_key}


def agent_cli(agent: str, *, search_path: str, base_urls: Mapping[str, str], key_envs: Mapping[str, str],
              environ: Mapping[str, str]) -> AgentCli:
    """The CLI for `agent`, found on `search_path`; JudgeUnavailable when it or its key is missing."""
    name = CLI_NAMES.get(agent)
    if name is None:
        raise JudgeUnavailable(f"unsupported judge agent {agent!r}")
    found = shutil.which(name, path=search_path)
    if found is None:
        raise JudgeUnavailable(f"the {name} CLI (agent_judge agent={agent}) is not installed on {search_path}")
    key_env = key_envs[agent]
    key = (environ.get(key_env) or "").strip()
    if not key:
        raise JudgeUnavailable(f"no key for the {name} judge: {key_env} is unset")
    try:
        allowed_destination(base_urls[agent])
    except ValueError as exc:
        raise JudgeUnavailable(f"the {name} judge endpoint: {exc}") from None
    return AgentCli(agent, Path(found).absolute(), base_urls[agent], key_env, key)


def cli_command(cli: AgentCli, request: dict[str, Any], workspace: Path) -> list[str]:
    """The official command line of the judge CLI for this request."""
    model, tool_mode = str(request["model"]), str(request.get("tool_mode") or "unrestricted")
    if cli.agent == "codex":
        argv = [str(cli.executable), "exec", "--model", model, "--cd", str(workspace),
                "--sandbox", str(request.get("sandbox") or "workspace-write"), "--skip-git-repo-check",
                "-c", f'model_reasoning_effort="{request.get("reasoning_effort") or "xhigh"}"', "--json"]
        if tool_mode != "unrestricted":
            argv.append("--ignore-user-config")
            for feature in CODEX_RESTRICTED_DISABLE_FEATURES:
                argv += ["--disable", feature]
            if tool_mode == "restricted":
                argv += ["--config", 'web_search="disabled"']
        return [*argv, "--", str(request["prompt"])]
    argv = [str(cli.executable), "--model", model, "--output-format", "stream-json", "--print", "--verbose"]
    if request.get("permission_mode"):
        argv += ["--permission-mode", str(request["permission_mode"])]
    if tool_mode != "unrestricted":
        tools = CLAUDE_SEARCH_TOOLS if tool_mode == "search" else CLAUDE_CORE_TOOLS
        argv += ["--tools", tools, "--strict-mcp-config", "--disable-slash-commands"]
    return argv


def _cli_mounts(executable: Path) -> list[Path]:
    """The CLI's own install, read-only: its directory (and its target's, if it is a link), unless the
    system directories every sandbox sees already hold it."""
    dirs = {executable.parent, executable.resolve().parent}
    return sorted(d for d in dirs if not any(d == Path(s) or Path(s) in d.parents for s in ("/usr", "/bin", "/lib")))


def _prepare_workspace(workspace: Path, request: dict[str, Any], pred_dir: Path, ref_dir: Path | None) -> None:
    expected = request.get("workspace") or {}
    collect_outputs(pred_dir, workspace / "agent_output")
    if file_manifest(workspace / "agent_output") != expected.get("agent_output"):
        raise JudgeUnavailable("the outputs differ from the ones the scorer listed for the judge")
    if expected.get("reference") is not None:
        if ref_dir is None:
            raise JudgeUnavailable("the reference the scorer listed for the judge is not available")
        collect_outputs(ref_dir, workspace / "reference")
        if file_manifest(workspace / "reference") != expected["reference"]:
            raise JudgeUnavailable("the reference differs from the one the scorer listed for the judge")
    (workspace / "JUDGE_INSTRUCTIONS.md").write_text(str(request.get("instructions") or ""), encoding="utf-8")


def run_agent_judge(request: dict[str, Any], *, pred_dir: Path, ref_dir: Path | None, cli: AgentCli,
                    backend: SandboxBackend, scratch: Path, max_timeout: float,
                    memory_bytes: int = AGENT_JUDGE_MIN_MEMORY_BYTES) -> dict[str, Any]:
    """One judge run: its record (`outcome` ok / timeout / error, the CLI's stdout, `score.json` as
    written), within the task's timeout clamped to `max_timeout`. Raises JudgeUnavailable when the
    run could not be set up at all."""
    with tempfile.TemporaryDirectory(prefix="agent-judge-", dir=scratch) as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)
        workspace, sockets = root / "workspace", root / "egress"
        workspace.mkdir()
        sockets.mkdir(mode=0o755)
        try:
            _prepare_workspace(workspace, request, pred_dir, ref_dir)
        except UnsafeOutput as exc:
            raise JudgeUnavailable(f"the judge workspace could not be made: {exc}") from None
        prompt = workspace / ".judge-prompt"
        prompt.write_text(str(request["prompt"]) if cli.agent == "claude_code" else "", encoding="utf-8")
        socket_path = sockets / "proxy.sock"
        argv = [*backend.python_command(), "-m", "scoring.judging.egress_bridge", "--socket", str(socket_path),
                "--port", str(BRIDGE_PORT), "--stdin", str(prompt), "--", *cli_command(cli, request, workspace)]
        env = {**python_runtime_env(), **cli.environment(f"http://127.0.0.1:{BRIDGE_PORT}")}
        limits = agent_judge_limits(request.get("timeout"), ceiling=max_timeout, env=env, memory_bytes=memory_bytes)
        mounts = [*backend.runtime_mounts(), sockets, *_cli_mounts(cli.executable)]
        with EgressProxy(socket_path, allowed_destination(cli.base_url)) as proxy:
            try:
                done = backend.run(argv, workspace, list(mounts), limits)
            except SandboxError as exc:
                raise JudgeUnavailable(f"the agent judge sandbox could not start: {exc}") from None
        record: dict[str, Any] = {"returncode": done.returncode, "egress_refused": proxy.refused[:20],
                                  "stderr_tail": done.stderr_text[-2000:]}
        if done.timed_out:
            return {**record, "outcome": "timeout"}
        if done.limit:
            return {**record, "outcome": "error", "error": done.reason or done.limit}
        try:
            score_json: str | None = read_output_file(workspace, SCORE_FILE, max_bytes=1 << 20).decode(
                "utf-8", errors="replace")
        except (UnsafeOutput, OSError):
            score_json = None
        return {**record, "outcome": "ok", "stdout": done.stdout_text, "score_json": score_json}


def agent_judge_reply(request: dict[str, Any], *, pred_dir: Path, ref_dir: Path | None,
                      judge_settings: AgentJudgeSettings, environ: Mapping[str, str], backend: SandboxBackend,
                      scratch: Path, memory_bytes: int = AGENT_JUDGE_MIN_MEMORY_BYTES) -> dict[str, Any]:
    """One agent judge's reply to `request`, with the CLI the settings name (on a worker and in local scoring
    alike). Raises JudgeUnavailable when its CLI or key is missing or the run could not be set up."""
    cli = agent_cli(str(request.get("agent")), search_path=judge_settings.search_path,
                    base_urls=judge_settings.base_urls, key_envs=judge_settings.key_envs, environ=environ)
    return run_agent_judge(request, pred_dir=pred_dir, ref_dir=ref_dir, cli=cli, backend=backend, scratch=scratch,
                           max_timeout=judge_settings.max_timeout, memory_bytes=memory_bytes)
