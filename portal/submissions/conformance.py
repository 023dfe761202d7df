"""Does a run follow the benchmark's run configuration? Flags for reviewers, computed at intake.

None of these refuses a bundle (intake's hard rules are in bundle_verify); each tells a maintainer
what to look at before publishing: a timeout other than the benchmark's, retries, a client or
sandbox other than the dataset's policy (settings.DATASET_RUN_POLICY: for seed42 the official
service's Docker-only rule, even where this Portal accepts more), results made by more than one
client (contracts.client_identity), whole levels without results,
tasks that their owner has confirmed many times with only small changes in between, whatever the
labels (probing the references), and a self-reported cost or token count the recorded calls do not bear out.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.conf import settings

from contracts import PROMPT_LEVELS
from contracts.client_identity import client_label, recorded_client
from portal.submissions.bundle_verify import VerifiedBundle
from portal.submissions.evidence import BENCHMARK_TIMEOUT_SECONDS
from portal.submissions.models import SubmissionEntry
from portal.submissions.selectors import attempts_sharing_tasks
from portal.submissions.tools import declared_tools
from portal.submissions.usage import discrepancy, run_usage
from scoring.models import Dataset

KINDS = {
    "timeout": "timeout other than the benchmark's",
    "attempts": "more than one attempt",
    "client_version": "client version outside the dataset's policy",
    "clients": "results made by more than one client",
    "sandbox": "sandbox outside the dataset's policy",
    "missing_levels": "whole levels without results",
    "probing": "many confirmed attempts with small changes",
    "usage_mismatch": "self-reported cost or tokens differ from the recorded calls",
    "external_tools": "external tools enabled where the dataset's policy forbids them",
}


def _flag(kind: str, detail: str) -> dict[str, str]:
    return {"kind": kind, "label": KINDS[kind], "detail": detail}


def _some(names: list[str]) -> str:
    return ", ".join(sorted(names)[:3]) + ("…" if len(names) > 3 else "")


def _outputs_key(outputs: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(o.get("path")), str(o.get("sha256"))) for o in outputs or []))


def _probing(bundle: VerifiedBundle, owner: Any, dataset: Dataset) -> dict[str, str] | None:
    """Flag when this is at least the Nth confirmed attempt by its owner at these tasks of the dataset and
    differs from the last such attempt in only a few results: the pattern of editing a handful of outputs
    and asking the scorer again. Attempts are grouped by owner, dataset and the tasks they share, never by
    the bundle's own labels (agent, model, effort), which the uploader writes and could rename each time: the
    attempt ledger's rows (`ScoredAttempt`), the same that the board's "scored attempts" count."""
    tasks = {e.task_id for e in bundle.entries}
    earlier = attempts_sharing_tasks(owner.id if hasattr(owner, "id") else owner, dataset.name, tasks)
    count = len(earlier)
    if count + 1 < settings.PROBING_MIN_ATTEMPTS:
        return None
    last = next((a.submission for a in earlier if a.submission_id is not None), None)
    if last is None:
        return None
    before = {base: _outputs_key(outputs) for base, outputs in
              SubmissionEntry.objects.filter(submission=last).values_list("base_name", "outputs")}
    now = {e.base_name: _outputs_key([{"path": o.path, "sha256": o.sha256} for o in e.outputs])
           for e in bundle.entries}
    shared = set(before) & set(now)
    if not shared:
        return None
    changed = sorted(base for base in shared if before[base] != now[base])
    if len(changed) * 100 > settings.PROBING_MAX_CHANGED_PERCENT * len(shared):
        return None
    what = f"{len(changed)} of {len(shared)} shared results changed" + (f" ({_some(changed)})" if changed else "")
    return _flag("probing", f"attempt {count + 1} at these tasks of {dataset.name} by this owner, whatever its "
                 f"labels; against the last confirmed run ({str(last.id)[:8]}), {what}")


_STATED = {"cost_usd": ("cost", lambda v: f"${v:,.4f}"), "output_tokens": ("output tokens", lambda v: f"{v:,.0f}")}


def _usage_mismatch(bundle: VerifiedBundle) -> dict[str, str] | None:
    """Flag when what the results state they cost (the `cost` block the agent's log fed) differs from what their
    recorded calls add up to by more than settings.USAGE_MISMATCH_PERCENT, over the results that carry both."""
    compared = run_usage([e.usage for e in bundle.entries])["compared"]
    limit = settings.USAGE_MISMATCH_PERCENT / 100
    found = []
    for name, (what, shown) in _STATED.items():
        off = discrepancy(compared[name])
        if off is None or off <= limit:
            continue
        numbers = compared[name]
        how = "more than the recorded calls allow" if off == float("inf") else f"{off:.0%} off"
        found.append(f"self-reported {what} {shown(numbers['self_reported'])} against {shown(numbers['trajectory'])} "
                     f"from the recorded calls over {numbers['results']} result(s) ({how})")
    if not found:
        return None
    return _flag("usage_mismatch", "; ".join(found) + f"; the board shows the recorded calls' figures "
                 f"(the limit is {settings.USAGE_MISMATCH_PERCENT} %)")


def dataset_run_policy(dataset: Dataset) -> dict[str, Any]:
    """The sandboxes, client versions and external tools `dataset`'s policy prescribes
    (settings.DATASET_RUN_POLICY); a dataset the settings do not name is held to what it accepts, the default
    client versions and no external tools."""
    policy = settings.DATASET_RUN_POLICY.get(dataset.name)
    if policy is not None:
        return policy
    return {"sandbox_modes": list(dataset.accepted_sandbox_modes or []),
            "client_versions": settings.DATASET_RUN_POLICY["seed42"]["client_versions"], "external_tools": False}


def conformance_flags(bundle: VerifiedBundle, dataset: Dataset, configuration: dict[str, Any]) -> list[dict[str, str]]:
    """The run-configuration flags of a verified bundle; `configuration` is the new run's
    CONFIGURATION_FIELDS as filter arguments (owner included)."""
    flags: list[dict[str, str]] = []
    timeouts: dict[int, list[str]] = {}
    for e in bundle.entries:
        seconds = e.evidence.get("timeout_seconds")
        if isinstance(seconds, int) and seconds != BENCHMARK_TIMEOUT_SECONDS:
            timeouts.setdefault(seconds, []).append(e.base_name)
    for seconds, bases in sorted(timeouts.items()):
        flags.append(_flag("timeout", f"{len(bases)} result(s) ran with a {seconds} s timeout (the benchmark's is "
                           f"{BENCHMARK_TIMEOUT_SECONDS} s), e.g. {_some(bases)}"))
    retries = [e.base_name for e in bundle.entries if e.attempt != 1]
    if retries:
        flags.append(_flag("attempts", f"{len(retries)} result(s) are attempt 2 or later (the benchmark runs one "
                           f"attempt), e.g. {_some(retries)}"))
    policy = dataset_run_policy(dataset)
    allowed = policy["client_versions"]
    if (bundle.framework_version or "") not in allowed:
        flags.append(_flag("client_version", f"made with client {bundle.framework_version or '(unknown)'!r}; "
                           f"{dataset.name}'s policy is {', '.join(allowed)}"))
    clients = Counter(client_label(*(recorded_client(e.provenance) or ("", "")), bundle.framework_version)
                      for e in bundle.entries)
    if len(clients) > 1:
        flags.append(_flag("clients", ", ".join(f"{label} ×{n}" for label, n in sorted(clients.items()))))
    modes = Counter(str((e.provenance.get("sandbox") or {}).get("effective_mode") or "") for e in bundle.entries)
    other = {mode: n for mode, n in modes.items() if mode not in policy["sandbox_modes"]}
    if other:
        shown = ", ".join(f"{mode or '(none)'} ×{n}" for mode, n in sorted(other.items()))
        accepted = ", ".join(sorted(dataset.accepted_sandbox_modes or []))
        flags.append(_flag("sandbox", f"results ran in {shown}; {dataset.name}'s policy is "
                           f"{', '.join(policy['sandbox_modes'])}, this Portal accepts {accepted}"))
    levels = Counter(e.prompt_level for e in bundle.entries)
    absent = [level for level in PROMPT_LEVELS if not levels.get(level)]
    if absent:
        flags.append(_flag("missing_levels", f"no results at all for {', '.join(absent)}"))
    probe = _probing(bundle, configuration["owner"], dataset)
    if probe:
        flags.append(probe)
    tools = declared_tools(e.provenance for e in bundle.entries)
    if tools["enabled"] and not policy.get("external_tools", False):
        flags.append(_flag("external_tools", f"{tools['enabled']} result(s) ran with external tools enabled "
                           f"({tools['summary']}); {dataset.name}'s policy forbids them"))
    mismatch = _usage_mismatch(bundle)
    if mismatch:
        flags.append(mismatch)
    return flags
