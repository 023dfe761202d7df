"""Every kind of page of the site at a desktop (1280 px) and a phone (390 px) width, in headless Chromium,
with realistic data: long model and display names, many rows, integrity and run-configuration flags.

No page may be wider than the viewport: a wide table scrolls inside its own box, the page never does.
Charts are read at the size the browser draws them: their text is legible, their legends tell every
entry apart, and the heatmap's column labels are drawn inside the figure. Screenshots of every page at
both widths are saved under var/test-output/layout/.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from contracts.bundle import build_bundle, write_archive
from contracts.digests import sha256_bytes
from leaderboard import services as review
from leaderboard.models import IntegrityFlag, LeaderboardEntry
from portal.accounts.services import cli_token_create
from portal.guides.selectors import guide_list
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from proposals import revisions
from proposals import services as proposal_services
from proposals.files import IncomingFile
from scoring.generation import read_task_dir
from scoring.models import Dataset, Instance, Task
from scoring.task_loading import difficulty_record_summary
from tests.leaderboard.factories import RunSpec, profile_score, published_in_bulk, scored_runs
from tests.results_tree import OS_SANDBOX
from tests.support import OUR_CLI, OUTPUT_DIR, REPO, LiveServer, Persona, browser_login, cli_env
from tests.usage_bundles import Call, claude_jsonl, not_recorded, official, ours, usage_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 390)
SHOTS = OUTPUT_DIR / "layout"
MIN_CHART_TEXT_PX = 11.0
# Realistic configurations: model names that share a long prefix, as providers' snapshot names do.
MODELS = [f"anthropic/claude-opus-4-1-20250805-extended-thinking-budget-{budget}" for budget in
          (32768, 16384, 8192, 4096)] + [
    "openai/gpt-5-2025-08-07-reasoning-effort-high", "openai/gpt-5-2025-08-07-reasoning-effort-medium",
    "moonshotai/kimi-k2-instruct-0905", "deepseek-ai/DeepSeek-V3.1-Terminus", "qwen/qwen3-coder-480b-a35b-instruct",
    "google/gemini-2.5-pro-preview-06-05", "mistralai/mistral-large-2411", "meta-llama/llama-4-maverick-17b-128e"]
AGENTS = ["claude_code_cli", "codex_cli", "kimi_cli", "openhands"]


@dataclass
class Site:
    public: list[tuple[str, str]] = field(default_factory=list)
    owner: list[tuple[str, str]] = field(default_factory=list)
    maintainer: list[tuple[str, str]] = field(default_factory=list)


def _catalog() -> dict[str, list[Instance]]:
    """Every task of tasks/ as the catalog stores it (real metadata, prompts and difficulty records),
    with one instance per dataset; no generation, so the archives named here are never read."""
    datasets = [Dataset.objects.create(name="seed42", seed=42, official=True, accepted_sandbox_modes=["os"],
                                       description="The official dataset: scored only by this Portal."),
                Dataset.objects.create(name="seed31415", seed=31415, accepted_sandbox_modes=["os", "linux_ns"],
                                       references_public=True, description="For local scoring.")]
    root = REPO / "tasks"
    tasks = []
    for meta in sorted(root.glob("*/*/task_meta.yaml")):
        source = read_task_dir(meta.parent, root)
        tasks.append(Task.objects.create(
            id=source.task_id, domain=source.domain, name=source.name, version=source.version, status=source.status,
            public_meta=source.public_meta, public_eval=source.public_eval, prompts=source.prompts,
            declared_outputs=source.declared_outputs, source_hash=source.source_hash, source_dir=str(meta.parent),
            difficulty=difficulty_record_summary(meta.parent, source.task_id)))
    return {ds.name: Instance.objects.bulk_create(
        Instance(instance_id=f"{t.id}__{ds.name}", dataset=ds, task=t, task_revision=1, task_source_hash="0" * 64,
                 input_archive="x", input_sha256="ab" * 32, input_bytes=123_456, reference_archive="x",
                 reference_sha256="0" * 64, generator_hash="0" * 64) for t in tasks) for ds in datasets}


AGENT_SCRIPT = r'''
import json, sys
ws, outputs = sys.argv[1], json.loads(sys.argv[2])
events = [{"type": "assistant", "message": {"content": [{"type": "text", "text": "writing"}] + [
    {"type": "tool_use", "id": f"t{k}", "name": "Write", "input": {"file_path": ws + "/" + name, "content": "1"}}
    for k, name in enumerate(outputs)]}}]
open("_trajectory.jsonl", "w").write("\n".join(json.dumps(e) for e in events))
for name in outputs:
    open(name, "w").write("1")
print("a long agent log line without spaces: " + "x" * 400)
'''


def _draft_run(owner: Persona, instance: Instance, tmp_path: Path) -> Submission:
    """A draft made by our `asibench run` and uploaded: real intake report and agent evidence."""
    folder = tmp_path / "instances" / instance.instance_id
    (folder / "data").mkdir(parents=True)
    (folder / "prompt_b3.md").write_text("compute\n")
    outputs = [o["name"] for o in instance.task.declared_outputs]
    (folder / "task_info.json").write_text(json.dumps({"expected_outputs": instance.task.declared_outputs}))
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT_SCRIPT)
    out = tmp_path / "results"
    cmd = f"{sys.executable} {agent} {{workspace}} '{json.dumps(outputs)}'"
    done = subprocess.run([*OUR_CLI, "run", "--instances-dir", str(tmp_path / "instances"), "--agent-cmd", cmd,
                           "--prompt-levels", "b3", "--output-dir", str(out), "--tasks-dir", str(tmp_path / "none"),
                           "--agent-config", json.dumps({"model": MODELS[0], "effort": "high"})],
                          env=cli_env(tmp_path / "home"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for path in out.glob("*/*.json"):  # only Docker runs are submittable: stamp it as one
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "result_schema_version" in data:
            data["provenance"]["sandbox"] = OS_SANDBOX
            path.write_text(json.dumps(data))
    build_bundle(out, tmp_path / "bundle")
    archive = write_archive(tmp_path / "bundle", tmp_path / "bundle.tar.gz")
    with archive.open("rb") as stream:
        return submissions.submission_intake(user=owner.user, stream=stream, content_length=None,
                                             filename=archive.name).submission


def _text_file(name: str, text: str) -> IncomingFile:
    data = text.encode("utf-8")
    return IncomingFile(name, io.BytesIO(data), len(data), sha256_bytes(data))


def _proposal(owner: Persona) -> Any:
    """A proposal of a real task's files, frozen into a submitted revision."""
    source = REPO / "tasks" / "electrical_engineering" / "ac_power_flow_qlimits"
    proposal = proposal_services.proposal_create(owner=owner.user, fields={
        "task_id": "electrical_engineering.ac_power_flow_with_reactive_power_limits_and_pv_to_pq_switching",
        "name": "AC power flow with reactive-power limits", "domain": "electrical_engineering",
        "objective": "Solve the AC power flow of a meshed grid whose generators hit their reactive limits. " * 4,
        "inputs": "data/grid.json (json): buses, lines, generators with Q limits", "outputs": "solution.json"})
    files = [_text_file(path.relative_to(source).as_posix(), path.read_text()) for path in sorted(source.rglob("*"))
             if path.is_file() and path.suffix in {".md", ".yaml", ".py"}]
    proposal_services.proposal_file_write(user=owner.user, proposal_id=proposal.id, files=files)
    proposal.refresh_from_db()
    report = {"ok": True, "checks": [{"status": "pass", "name": name, "summary": summary} for name, summary in (
        ("static", "task_meta.yaml, task_eval.yaml and the prompts follow the task contract"),
        ("determinism", "generate_gt.py gave byte-identical instances for seed42 twice: " + "ab12" * 16),
        ("gt_self_check", "the reference solution scores 100.0 on seed42 and seed31415"))]}
    revisions.revision_freeze(proposal, owner.user, report)
    return proposal


def _usage(k: int) -> Any:
    """Most runs record their calls, at costs a thousandfold apart; some only state tokens; some record nothing."""
    if k % 7 == 3:
        fields = not_recorded()
    elif k % 7 == 5:
        fields = official(claude_jsonl([Call()]), "b")
    else:
        fields = ours(claude_jsonl([Call(input=40 * 4 ** (k % 6), output=25 * 3 ** (k % 5))] * (1 + k % 4),
                                   stated_usd=0.3), "b")
    usage = usage_for(fields, seconds=60.0 + k)
    return lambda task, level: usage


def build_site(submitter: Persona, other_user: Persona, maintainer: Persona, tmp_path: Path) -> Site:
    instances = _catalog()
    seed42 = instances["seed42"]
    owners = [submitter.user, other_user.user, maintainer.user]
    specs = [RunSpec(owner=owners[k % 3], instances=seed42, agent=AGENTS[k % len(AGENTS)],
                     model=MODELS[k % len(MODELS)], effort=("high", "medium", "low")[k // len(MODELS) % 3],
                     score=lambda t, lv, k=k: profile_score(k, t, lv), usage=_usage(k))
             for k in range(36)]
    # Two earlier runs of the first configuration: its entry page compares three.
    repeats = scored_runs([RunSpec(**{**specs[0].__dict__, "score": lambda t, lv, k=k: profile_score(k, t, lv)})
                           for k in (40, 41)])
    runs = scored_runs(specs)
    published, queued = runs[:30], runs[30:]

    def display_name(run: Submission) -> str:
        return f"{run.agent} · {run.model} · {run.effort} effort · {run.owner.display_name}"[:120]

    for repeat in repeats:
        review.run_review_publish(submission_id=repeat.id, actor=maintainer.user, display_name=display_name(repeat))
    review.run_review_publish(submission_id=published[0].id, actor=maintainer.user,
                              display_name=display_name(published[0]),
                              public_reason="Published after review: complete, no flags, " + "reviewed " * 20)
    published_in_bulk(published[1:], maintainer.user, display_name)
    for k, run in enumerate(queued):  # none, one or two flags of each kind
        IntegrityFlag.objects.bulk_create(
            IntegrityFlag(submission=run, kind=kind, base_name=f"{seed42[j].instance_id}__b3",
                          detail="outputs byte-identical to another user's run")
            for j, kind in enumerate(list(IntegrityFlag.Kind)[: k % 3]))
        run.conformance = [{"kind": kind, "label": label, "detail": "seen in this run"}
                           for kind, label in (("sandbox", "sandbox outside the dataset's policy"),
                                               ("timeout", "timeout other than the benchmark's"))[: k % 3]]
        run.save(update_fields=["conformance"])

    draft = _draft_run(submitter, seed42[0], tmp_path)
    token = cli_token_create(user=submitter.user, name="laptop at the lab, " + "long token name " * 4).token
    scored = next(r for r in published if r.owner_id == submitter.user.pk)
    proposal = _proposal(submitter)
    entry = LeaderboardEntry.objects.get(submission=published[0])
    task = "electrical_engineering.ac_power_flow_qlimits"
    site = Site()
    site.public = [
        ("home", "/"), ("catalog", "/tasks/"), ("task", f"/tasks/{task}/"), ("dataset", "/datasets/seed42/"),
        ("leaderboard", "/leaderboard/"), ("leaderboard-domain", "/leaderboard/?domain=electrical_engineering"),
        ("heatmap", "/leaderboard/heatmap/"), ("entry", f"/leaderboard/entries/{entry.id}/"),
        ("cost", "/leaderboard/cost/"), ("cost-b3", "/leaderboard/cost/?value=b3"),
        ("moderation", "/leaderboard/moderation"), ("guides", "/guides/"),
        *[(f"guide-{guide.slug}", guide.url) for guide in guide_list()],
        ("status", "/status"), ("login", "/accounts/login/"), ("signup", "/accounts/signup/"),
    ]
    site.owner = [
        ("dashboard", "/submit/dashboard"), ("run-draft", f"/submit/submissions/{draft.id}"),
        ("run-scored", f"/submit/submissions/{scored.id}"), ("upload", "/submit/submit-results"),
        ("withdraw-confirm", f"/submit/submissions/{draft.id}/withdraw"),
        ("settings", "/submit/settings"), ("revoke-confirm", f"/submit/settings/tokens/{token.id}/revoke"),
        ("proposals", "/submit/proposals"), ("proposal-new", "/submit/proposals/new"),
        ("proposal", f"/submit/proposals/{proposal.id}"),
        *[(f"proposal-step-{step}", f"/submit/proposals/{proposal.id}/edit/{step}")
          for step in ("identity", "objective", "io", "prompts", "scoring", "files", "testing")],
    ]
    site.maintainer = [
        ("review-queue", "/leaderboard/review/"), ("review-queue-all", "/leaderboard/review/?tab=all"),
        ("review-run", f"/leaderboard/review/{queued[2].id}/"), ("review-draft", f"/leaderboard/review/{draft.id}/"),
        ("run-maintainer", f"/submit/submissions/{scored.id}"),
        ("proposal-queue", "/submit/proposals/review"), ("proposal-review", f"/submit/proposals/{proposal.id}/review"),
    ]
    return site


# What sticks out, for the failure message: the outermost elements whose box ends beyond the viewport, and
# elements whose own content (a long word, say) runs past their box.
WIDE_ELEMENTS = """(width) => {
  const name = el => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className
    ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  const beyond = el => el.getBoundingClientRect().right > width + 0.5;
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (beyond(el) && !(el.parentElement && beyond(el.parentElement))) {
      out.push(`${name(el)} ends at ${Math.round(el.getBoundingClientRect().right)}px`);
    } else if (!beyond(el) && getComputedStyle(el).overflowX === 'visible' && el.scrollWidth > el.clientWidth + 1
               && el.getBoundingClientRect().left + el.scrollWidth > width + 0.5) {
      out.push(`${name(el)}'s content runs to ${Math.round(el.getBoundingClientRect().left + el.scrollWidth)}px`);
    }
  }
  return out.slice(0, 6);
}"""

# Every text of every chart: its text, the size it is drawn at (font size times the SVG's scale) and
# whether it lies inside its chart's drawn box.
CHART_TEXTS = """() => [...document.querySelectorAll('svg.chart')].flatMap((svg, index) => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].map(t => {
    const r = t.getBoundingClientRect();
    const m = t.getScreenCTM();  // its scale, also when the text is rotated
    const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    return {chart: svg.getAttribute('aria-label'), index, text: t.textContent, px, label: t.classList.contains('label'),
            inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5
                    && r.bottom <= box.bottom + 0.5};
  });
})"""


# Words the issue found missing, checked where they are shown: what a file history's "final" and a task's
# "sample"/"final" mean, and what the review queue's flags say.
EXPLAINED = {"run-draft": ("[data-testid=file-history-legend]", "final, the file as the agent left it"),
             "catalog": ("[data-testid=status-legend]", "sample a worked example of the task format"),
             "task": ("[data-testid=task-status]", "final calibrated, with frozen prompts"),
             "review-queue": ("[data-testid=flag-legend]", "integrity flags are found when a run is scored")}


def visit(server: LiveServer, page: Any, width: int, name: str, path: str) -> list[str]:
    """Open one page; the problems found on it (empty when it fits and its charts read well)."""
    response = page.goto(server.url + path)
    assert response.status == 200, f"{path} answered {response.status}"
    problems = []
    scroll_width = page.evaluate("document.scrollingElement.scrollWidth")
    if scroll_width > width:
        problems.append(f"{width}px {name} ({path}) is {scroll_width}px wide: "
                        + ", ".join(page.evaluate(WIDE_ELEMENTS, width)))
    if name.startswith("leaderboard") and width >= 1280:
        # The board's table fits a laptop's window whole, its cost and tokens columns included: nothing to scroll.
        overflow = page.evaluate("() => { const box = document.querySelector('table.board').parentElement;"
                                 " return box.scrollWidth - box.clientWidth; }")
        if overflow > 0:
            problems.append(f"{width}px {name}: the board's table is {overflow}px wider than its box")
    texts = page.evaluate(CHART_TEXTS)
    for text in texts:
        if text["px"] < MIN_CHART_TEXT_PX:
            problems.append(f"{width}px {name}: chart text {text['text']!r} drawn at {text['px']:.1f}px")
        if not text["inside"]:
            problems.append(f"{width}px {name}: chart text {text['text']!r} drawn outside its chart")
    labels: dict[int, list[str]] = {}
    for text in texts:
        if text["label"]:
            labels.setdefault(text["index"], []).append(text["text"])
    for entries in labels.values():
        if len(set(entries)) != len(entries):
            problems.append(f"{width}px {name}: chart labels repeat: {entries}")
    if name in EXPLAINED:
        selector, words = EXPLAINED[name]
        shown = " ".join(page.locator(selector).first.text_content().split())
        if words not in shown:
            problems.append(f"{width}px {name}: {selector} says {shown!r}, not {words!r}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{width}-{name}.png"), full_page=True)
    return problems


def test_no_page_is_wider_than_the_viewport_and_charts_are_legible(
        portal_server, browser, submitter, other_user, maintainer, tmp_path):
    site = build_site(submitter, other_user, maintainer, tmp_path)
    problems = []
    for width in WIDTHS:
        for persona, pages in ((None, site.public), (submitter, site.owner), (maintainer, site.maintainer)):
            context = browser.new_context(viewport={"width": width, "height": 900})
            page = context.new_page()
            if persona is not None:
                browser_login(page, portal_server, persona)
            for name, path in pages:
                problems += visit(portal_server, page, width, name, path)
            context.close()
    assert not problems, "\n".join(problems)
