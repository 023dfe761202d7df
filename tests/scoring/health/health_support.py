"""Task roots for the health-check tests: the sound fixture task (health_task/) and broken variants."""

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "health_task"
TASK = "demo.health_sum"
# The deliberate scorer bug: the scoring contract compares the sum with the reference's count.
SCORER_BUG = ("ref_file: total_ref.npy", "ref_file: count_ref.npy")


def task_root(tmp_path: Path, name: str = "tasks", scorer_bug: bool = False) -> Path:
    root = tmp_path / name
    target = root / "demo" / "health_sum"
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("__pycache__"))
    if scorer_bug:
        path = target / "task_eval.yaml"
        path.write_text(path.read_text().replace(*SCORER_BUG))
    return root


JUDGED_ENTRY = """    - scorer: llm_judge
      weight: 20
      config:
        model: openai/gpt-5.4
        pred_file: report.md
        ref_file: report_ref.md
        num_judges: 1
        rubric: "Score 0-10: does the report give the sum the reference gives?"
"""


def judged_task_root(tmp_path: Path) -> Path:
    """The fixture task with a report.md judged by a model (20 of 100 points). Every solution writes a
    report the local endpoint (tests/judge_endpoint.py) scores 10 of 10, so the judged points never tell
    the naive agent from the reference: the sum does."""
    root = task_root(tmp_path, "judged")
    target = root / "demo" / "health_sum"
    meta = target / "task_meta.yaml"
    meta.write_text(meta.read_text() + '    - {name: report.md, type: text, description: "how the sum was found"}\n')
    evaluation = target / "task_eval.yaml"
    evaluation.write_text(evaluation.read_text().replace("      weight: 100\n", "      weight: 80\n").replace(
        "generation:", JUDGED_ENTRY + "generation:"))
    generator = target / "generate_gt.py"
    report = '    (output_dir / "reference" / "report_ref.md").write_text(f"The sum is {sum(numbers)}.")\n'
    generator.write_text(generator.read_text().replace("    for level in", report + "    for level in"))
    for script in ("solve.py", "naive.py"):
        path = target / "solution" / script
        path.write_text(path.read_text() + '(ws / "report.md").write_text("JUDGE-SCRIPT:well:10 I added them.")\n')
    return root
