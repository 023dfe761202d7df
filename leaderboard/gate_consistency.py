"""Gate consistency: patterns of hard-gate passes and failures across a run's levels and tasks that a reviewer
should look at before publishing (ASI-Bench's review flow). Pure; `leaderboard.services.integrity_flags_compute`
turns each anomaly into an integrity flag with its evidence.

- `gate_inconsistent`: byte-identical declared outputs of one instance pass its hard gates in one result and fail
  them in another, at another level of the run or in another run (`elsewhere`). Gates read the outputs and the
  instance's reference, not the prompt level: a deterministic gate cannot do that, so either the gate is not
  deterministic or something other than the outputs decided.
- `same_across_levels`: identical outputs at every level it ran of a task whose metadata says its outputs must
  differ by level (`task_meta.yaml` `review: {outputs_vary_by_level: true}`).
- `same_across_tasks`: byte-identical declared outputs for two different tasks, which have different inputs and
  references.
- `gates_vs_scores`: every hard gate of the run passes while every scored check fails, or every gate fails while
  every scored check passes (scored over at least `MIN_RESULTS` results).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

MIN_RESULTS = 4


@dataclass(frozen=True)
class GateRecord:
    base_name: str
    task_id: str
    instance_id: str
    prompt_level: str
    outputs_digest: str  # the digest of its declared outputs together ("" when it has none)
    hard_gates_passed: bool
    gate_results: list[dict[str, Any]]
    score_results: list[dict[str, Any]]
    elsewhere: bool = False  # a result of another run, read only for `gate_inconsistent`


@dataclass(frozen=True)
class Anomaly:
    kind: str
    base_name: str
    detail: str


def _some(names: list[str]) -> str:
    return ", ".join(sorted(names)[:4]) + ("…" if len(names) > 4 else "")


def _inconsistent_gates(records: list[GateRecord]) -> list[Anomaly]:
    groups: dict[tuple[str, str], list[GateRecord]] = defaultdict(list)
    for r in records:
        if r.outputs_digest and (r.gate_results or r.elsewhere):
            groups[(r.instance_id, r.outputs_digest)].append(r)
    found = []
    for (instance_id, digest), group in sorted(groups.items()):
        passed = [r.base_name for r in group if r.hard_gates_passed]
        failed = [r.base_name for r in group if not r.hard_gates_passed]
        ours = [r.base_name for r in group if not r.elsewhere]
        if passed and failed and ours:
            found.append(Anomaly("gate_inconsistent", sorted(set(ours) & set(failed) or set(ours))[0],
                                 f"identical outputs ({digest[:12]}) of {instance_id} pass the hard gates in "
                                 f"{_some(passed)} and fail them in {_some(failed)}"))
    return found


def _same_across_levels(records: list[GateRecord], vary_by_level: set[str]) -> list[Anomaly]:
    by_task: dict[str, list[GateRecord]] = defaultdict(list)
    for r in records:
        if r.task_id in vary_by_level and r.outputs_digest:
            by_task[r.task_id].append(r)
    found = []
    for task_id, group in sorted(by_task.items()):
        levels = {r.prompt_level for r in group}
        digests = {r.outputs_digest for r in group}
        if len(levels) > 1 and len(digests) == 1:
            found.append(Anomaly("same_across_levels", group[0].base_name,
                                 f"{task_id}: identical outputs at {', '.join(sorted(levels))}, though the task "
                                 "requires outputs that differ by level"))
    return found


def _same_across_tasks(records: list[GateRecord]) -> list[Anomaly]:
    tasks_of: dict[str, dict[str, str]] = defaultdict(dict)
    for r in records:
        if r.outputs_digest:
            tasks_of[r.outputs_digest].setdefault(r.task_id, r.base_name)
    return [Anomaly("same_across_tasks", sorted(bases.values())[0],
                    f"byte-identical outputs ({digest[:12]}) for {len(bases)} different tasks: "
                    f"{_some(list(bases.values()))}")
            for digest, bases in sorted(tasks_of.items()) if len(bases) > 1]


def _gates_vs_scores(records: list[GateRecord]) -> list[Anomaly]:
    checked = [r for r in records if r.gate_results and r.score_results]
    if len(checked) < MIN_RESULTS:
        return []
    gates = [bool(g.get("passed")) for r in checked for g in r.gate_results]
    scores = [bool(s.get("passed")) for r in checked for s in r.score_results]
    if all(gates) and not any(scores):
        return [Anomaly("gates_vs_scores", "", f"all {len(gates)} hard-gate checks of {len(checked)} results pass "
                        f"while all {len(scores)} scored checks fail")]
    if not any(gates) and all(scores):
        return [Anomaly("gates_vs_scores", "", f"all {len(gates)} hard-gate checks of {len(checked)} results fail "
                        f"while all {len(scores)} scored checks pass")]
    return []


def gate_anomalies(records: list[GateRecord], vary_by_level: set[str]) -> list[Anomaly]:
    """The anomalies of one run's scored results (and, for `gate_inconsistent`, other runs' results with the same
    outputs, marked `elsewhere`); `vary_by_level`: the tasks whose outputs must differ by level."""
    own = [r for r in records if not r.elsewhere]
    return [*_inconsistent_gates(records), *_same_across_levels(own, vary_by_level),
            *_same_across_tasks(own), *_gates_vs_scores(own)]


def outputs_vary_by_level(public_meta: dict[str, Any]) -> bool:
    review = (public_meta or {}).get("review")
    return bool(isinstance(review, dict) and review.get("outputs_vary_by_level") is True)
