"""Scored runs built straight in the ORM (bulk), so board tests need no scorer and no sandbox."""

import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from portal.submissions.models import ScoredAttempt, Submission, SubmissionEntry
from scoring.aggregation import ScoredResult, aggregate
from scoring.models import Dataset, Instance, InstanceScore, ScoringRun, Task

LEVELS = ("b1", "b2", "b3", "b4")
OS_SANDBOX = {"requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
              "verification_status": "docker_container", "image_identity": "sha256:" + "ab" * 32}
DEFAULT_DOMAINS = {"chemistry": 2, "math": 2, "biology": 1}
DECLARED_OUTPUTS = [{"name": "result.json", "type": "json"}, {"name": "curve.npy", "type": "npy"}]


def make_catalog(domains: dict[str, int] | None = None, datasets: Sequence[str] = ("seed42", "seed31415"),
                 ) -> dict[str, list[Instance]]:
    """Tasks named <domain>.task_<i>, declaring DECLARED_OUTPUTS, with one instance each in every dataset."""
    tasks = [Task(id=f"{domain}.task_{i}", domain=domain, name=f"{domain} task {i}", version="1.0", status="final",
                  revision=1, source_hash="0" * 64, source_dir="/nonexistent", declared_outputs=DECLARED_OUTPUTS)
             for domain, count in (domains or DEFAULT_DOMAINS).items() for i in range(1, count + 1)]
    Task.objects.bulk_create(tasks)
    out = {}
    for k, name in enumerate(datasets):
        ds = Dataset.objects.create(name=name, seed=int(name.removeprefix("seed")), official=k == 0,
                                    accepted_sandbox_modes=["os", "linux_ns"])
        out[name] = Instance.objects.bulk_create(
            Instance(instance_id=f"{t.id}__{name}", dataset=ds, task=t, task_revision=1, task_source_hash="0" * 64,
                     input_archive="x", input_sha256="0" * 64, input_bytes=1, reference_archive="x",
                     reference_sha256="0" * 64, generator_hash="0" * 64)
            for t in tasks)
    return out


def profile_score(run: int, task_id: str, level: str) -> float:
    """Deterministic, falling from B1 to B4 like the benchmark, with per-task spread."""
    wiggle = int(hashlib.sha256(f"{run}:{task_id}:{level}".encode()).hexdigest()[:6], 16) / 0xFFFFFF
    base = {"b1": 60.0, "b2": 35.0, "b3": 30.0, "b4": 28.0}[level]
    return round(max(0.0, min(100.0, base + 30.0 * (wiggle - 0.5) - run % 7)), 3)


@dataclass
class RunSpec:
    owner: Any
    instances: list[Instance]
    agent: str = "claude-code"
    model: str = "model-a"
    effort: str = "high"
    sandbox: str = "os"
    score: Callable[[str, str], float] = field(default=lambda task, level: profile_score(0, task, level))
    outputs: Callable[[str, str], list[dict[str, Any]]] | None = None
    provenance: dict[str, Any] = field(default_factory=lambda: {"agent": {"agent_name": "claude-code"},
                                                                "sandbox": OS_SANDBOX})
    timed_out_with_outputs: set[str] = field(default_factory=set)  # base names
    task_revision: int | None = None  # what the scores record; default: the instance's
    # Each result's usage (portal.submissions.usage.result_usage) by (task, level); None: the run recorded none.
    usage: Callable[[str, str], dict[str, Any]] | None = None


def _outputs(submission_id: Any, base: str) -> list[dict[str, Any]]:
    digest = hashlib.sha256(f"{submission_id}:{base}".encode()).hexdigest()
    return [{"path": "result.json", "member": f"{base}.outputs/result.json", "sha256": digest, "bytes": 10}]


def scored_runs(specs: Sequence[RunSpec], *, with_results: bool = True) -> list[Submission]:
    """Scored submissions with entries, one complete ScoringRun each and its InstanceScores, in bulk.

    `with_results=False` keeps only the submission and its scoring aggregate: enough for the
    public board, which never reads per-result rows, and much faster for hundreds of runs.
    """
    from portal.submissions.usage import run_usage

    now = timezone.now()
    submissions = [Submission(owner=s.owner, dataset_id=s.instances[0].dataset_id, status=Submission.Status.SCORED,
                              archive=f"submissions/{uuid.uuid4()}.tar.gz", archive_sha256=uuid.uuid4().hex * 2,
                              archive_bytes=1000, framework_version="0.2.0", agent=s.agent, model=s.model,
                              effort=s.effort, sandbox=s.sandbox, scored_at=now, confirmed_at=now,
                              report={"tasks_covered": len(s.instances), "tasks_in_dataset": len(s.instances)},
                              usage=run_usage([s.usage(i.task_id, level) for i in s.instances for level in LEVELS])
                              if s.usage else {})
                   for s in specs]
    Submission.objects.bulk_create(submissions)
    # Confirm's row in the attempt ledger, on datasets whose references are private.
    private = set(Dataset.objects.filter(references_public=False).values_list("name", flat=True))
    ScoredAttempt.objects.bulk_create(
        ScoredAttempt(owner=s.owner, dataset_id=sub.dataset_id, submission=sub, confirmed_at=now,
                      tasks=sorted({i.task_id for i in s.instances}))
        for s, sub in zip(specs, submissions, strict=True) if sub.dataset_id in private)
    entries: list[SubmissionEntry] = []
    for spec, sub in zip(specs, submissions, strict=True):
        for inst in spec.instances:
            for level in LEVELS:
                base = f"{inst.instance_id}__{level}"
                entries.append(SubmissionEntry(
                    submission=sub, base_name=base, instance=inst, task_id=inst.task_id, prompt_level=level,
                    result_status="completed",
                    outputs=spec.outputs(base, level) if spec.outputs else _outputs(sub.id, base),
                    timed_out_with_outputs=base in spec.timed_out_with_outputs, provenance=spec.provenance,
                    usage=spec.usage(inst.task_id, level) if spec.usage else {}))
    if with_results:
        SubmissionEntry.objects.bulk_create(entries, batch_size=2000)
    by_sub: dict[Any, list[SubmissionEntry]] = {}
    for e in entries:
        by_sub.setdefault(e.submission_id, []).append(e)
    runs, scores = [], []
    for spec, sub in zip(specs, submissions, strict=True):
        results = [ScoredResult(e.instance.instance_id, e.task_id, e.prompt_level, 1, True,
                                spec.score(e.task_id, e.prompt_level)) for e in by_sub[sub.id]]
        runs.append(ScoringRun(submission=sub, number=1, status=ScoringRun.Status.COMPLETE, finished_at=now,
                               aggregate=aggregate(results)))
        sub.overall_score = runs[-1].aggregate["overall"]
    ScoringRun.objects.bulk_create(runs)
    for spec, sub, run in zip(specs, submissions, runs, strict=True) if with_results else ():
        for e in by_sub[sub.id]:
            pct = spec.score(e.task_id, e.prompt_level)
            scores.append(InstanceScore(
                scoring_run=run, entry=e, outcome="scored", final_score=pct, max_score=100.0, percent=pct,
                hard_gates_passed=pct > 0, reason="" if pct else "hard gate failed: output missing",
                engine_version="1.0.0", task_revision=spec.task_revision or 1, reference_sha256="0" * 64,
                sandbox_backend="bwrap"))
    InstanceScore.objects.bulk_create(scores, batch_size=2000)
    Submission.objects.bulk_update(submissions, ["overall_score"])
    return submissions


def scored_run(spec: RunSpec) -> Submission:
    return scored_runs([spec])[0]


def published_in_bulk(submissions: Sequence[Submission], actor: Any, name: Callable[[Submission], str]) -> None:
    """What `run_review_publish` leaves behind, for many runs at once (distinct configurations assumed)."""
    from leaderboard.models import LeaderboardEntry, ReviewAction, RunReview
    from leaderboard.selectors import board_cache_invalidate
    from leaderboard.services import entry_snapshot

    runs = {r.submission_id: r for r in ScoringRun.objects.filter(submission__in=submissions)}
    LeaderboardEntry.objects.bulk_create(
        LeaderboardEntry(submission=s, scoring_run=runs[s.id], dataset_id=s.dataset_id, display_name=name(s),
                         owner_id=s.owner_id, agent=s.agent, model=s.model, effort=s.effort, sandbox=s.sandbox,
                         **entry_snapshot(s, runs[s.id]))
        for s in submissions)
    RunReview.objects.bulk_create(RunReview(submission=s, state="published", display_name=name(s), decided_by=actor)
                                  for s in submissions)
    ReviewAction.objects.bulk_create(ReviewAction(submission=s, actor=actor, kind="publish", display_name=name(s),
                                                  scoring_number=1) for s in submissions)
    board_cache_invalidate()
