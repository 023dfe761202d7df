"""Pre-submit validation of one task directory (scoring contract §5), as a pure function.

`validate_task_dir(path)` runs the static checks, the file and id rules of our catalog, the
generator contract, a byte-for-byte determinism check (two runs with the same parameters),
generation with two further seeds, and the GT self-check (the reference fed through the
task's own scoring contract must earn full marks). The generator and the scorer only ever
run in subprocesses with timeouts, so the Portal can call this on an untrusted proposal
from a worker (inside its own sandbox) without importing the author's code.

Our deviations from upstream's `validate --pre-submit`, all stricter: determinism is compared,
the seed42/seed31415 references are generated and compared, the generator runs as a subprocess
with a timeout, the task id follows the Portal's rule, and b4 and task_eval.yaml are required.
Each of these says so when it fails ("Portal check, not in the official pre-submit", with why
the Portal needs it); they stay failures because the catalog could not publish the task
otherwise. What the Portal merely recommends is a warning with the same label: the declared
generator contract (INPUT_SPEC/OUTPUT_SPEC/DEFAULT_PARAMS/generate), and a directory named
other than the task (a warning in the official static checks too).
"""

from __future__ import annotations

import copy
import filecmp
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cli_client.running.local_score import run_engine
from contracts import PROMPT_LEVELS
from contracts.digests import has_volatile_keys, stable_json_digest
from contracts.task_files import PORTAL_TASK_ID_RE
from scoring.engine import TaskDefinitionError, load_task, sample_params, static_validate
from scoring.engine.cli import score_argv
from scoring.engine.judge_models import JUDGE_SCORERS, agent_judge_timeout_notes, judge_config_problems
from scoring.engine.safe_yaml import untrusted_yaml_load
from scoring.engine.static_checks import PORTAL_CHECK
from scoring.engine.taskdef import mapping_at
from scoring.judging.local import agent_judge_ceiling, endpoint_status, score_with_judges

SELFCHECK_SKIPPED_SCORERS = frozenset({"multimodal", "llm_judge", "agent_judge", "code_analysis"})
PROJECT_ROOT = Path(__file__).resolve().parents[2]

_INTROSPECT = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("generate_gt_under_validation", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
def names(spec):
    return [str(e.get("name")) for e in spec if isinstance(e, dict)] if isinstance(spec, list) else None
print(json.dumps({
    "generate": callable(getattr(module, "generate", None)),
    "default_params": getattr(module, "DEFAULT_PARAMS", None),
    "input_spec": names(getattr(module, "INPUT_SPEC", None)),
    "output_spec": names(getattr(module, "OUTPUT_SPEC", None)),
}, default=str))
"""


@dataclass
class Check:
    name: str
    ok: bool | None
    """True passed, False failed, None skipped (an earlier check made it meaningless)."""
    summary: str
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": {True: "pass", False: "fail", None: "skipped"}[self.ok],
                "summary": self.summary, "details": self.details}


@dataclass
class ValidationReport:
    task_dir: Path
    task_id: str | None = None
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]

    def to_dict(self) -> dict[str, Any]:
        return {"task_dir": str(self.task_dir), "task_id": self.task_id, "ok": self.ok,
                "checks": [c.to_dict() for c in self.checks], "warnings": self.warnings}


class GeneratorFailed(Exception):
    pass


def _subprocess_env() -> dict[str, str]:
    # No bytecode: the generator must not leave __pycache__ in the task directory.
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def generator_run_local(task_dir: Path, output_dir: Path, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """`python generate_gt.py --output-dir D --params JSON` (cwd = task dir); returns instance_meta.json."""
    argv = [sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(output_dir),
            "--params", json.dumps(params)]
    try:
        done = subprocess.run(argv, cwd=task_dir, capture_output=True, text=True, timeout=timeout,
                              env=_subprocess_env(), check=False)
    except subprocess.TimeoutExpired:
        raise GeneratorFailed(f"generate_gt.py did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        raise GeneratorFailed(f"generate_gt.py exited with {done.returncode}: {_tail(done.stderr)}")
    reference = output_dir / "reference"
    if not reference.is_dir() or not any(reference.iterdir()):
        raise GeneratorFailed("generate_gt.py produced no reference/ files")
    try:
        meta = json.loads((output_dir / "instance_meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    return meta if isinstance(meta, dict) else {}


def tree_differences(a: Path, b: Path, under: str = "") -> list[str]:
    """Relative paths (below `under/` when given) that differ between two generated instance trees
    under the determinism rule."""
    def files(root: Path) -> set[str]:
        names = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
        return {n for n in names if n.startswith(f"{under}/")} if under else names
    files_a, files_b = files(a), files(b)
    diffs = [f"{name} (only in one run)" for name in sorted(files_a ^ files_b)]
    for name in sorted(files_a & files_b):
        if has_volatile_keys(name):  # compared without its volatile keys (the determinism rule)
            if stable_json_digest(a / name) != stable_json_digest(b / name):
                diffs.append(name)
            continue
        if not filecmp.cmp(a / name, b / name, shallow=False):
            diffs.append(name)
    return diffs


def preflight_params(task: dict[str, Any], default_params: dict[str, Any]) -> dict[str, Any]:
    """The representative parameters of §5.3: settings[0], or DEFAULT_PARAMS + YAML defaults."""
    generation = mapping_at(task, "generation")
    if generation.get("mode", "infinite") == "finite":
        settings = generation.get("settings") or []
        if not settings or not isinstance(settings[0], dict):
            raise GeneratorFailed("finite generation mode needs at least one setting")
        return {k: v for k, v in settings[0].items() if k != "id"}
    declared = {name: spec["default"] for name, spec in (generation.get("parameters") or {}).items()
                if isinstance(spec, dict) and "default" in spec}
    params = {**default_params, **declared}
    if generation.get("seed") and "seed" not in params:
        params["seed"] = 0
    return params


def extra_seeds(first: int) -> list[int]:
    rng, seeds = random.Random(12345), list[int]()
    while len(seeds) < 2:
        seed = rng.randint(0, 999999)
        if seed != first and seed not in seeds:
            seeds.append(seed)
    return seeds


# ---------------------------------------------------------------- GT self-check (§5.3)
def _selfcheck_skipped(entry: Any) -> bool:
    return isinstance(entry, dict) and (bool(entry.get("skip_in_gt_selfcheck"))
                                        or entry.get("scorer") in SELFCHECK_SKIPPED_SCORERS)


def strip_for_selfcheck(evaluation: dict[str, Any]) -> tuple[dict[str, Any], float]:
    stripped = copy.deepcopy(evaluation)
    skipped = 0.0
    for key in ("gates", "scoring"):
        entries = stripped.get(key) or []
        if key == "scoring":
            skipped += sum(float(e.get("weight", 1.0)) for e in entries if _selfcheck_skipped(e))
        stripped[key] = [e for e in entries if not _selfcheck_skipped(e)]
    return stripped, skipped


def _configs(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    configs = []
    for key in ("gates", "scoring"):
        for entry in evaluation.get(key) or []:
            if not isinstance(entry, dict):
                continue
            config = mapping_at(entry, "config")
            configs.append(config)
            for sub in config.get("sub_scorers") or []:
                if isinstance(sub, dict) and isinstance(sub.get("config"), dict):
                    configs.append(sub["config"])
    return configs


def pred_ref_mapping(evaluation: dict[str, Any]) -> dict[str, str]:
    """prediction name → reference name, from the scorer configs' file pairs."""
    mapping: dict[str, str] = {}
    for config in _configs(evaluation):
        pred, ref = config.get("pred_file"), config.get("ref_file")
        if isinstance(pred, str) and isinstance(ref, str) and pred != ref:
            mapping[pred] = ref
        single = config.get("file")
        if isinstance(single, str) and single not in mapping:
            mapping[single] = single
        for key, value in config.items():
            if not (key.endswith("_file") and isinstance(value, str)):
                continue
            if key.startswith("reference_") and isinstance(config.get(key[len("reference_"):]), str):
                mapping[config[key[len("reference_"):]]] = value
            elif isinstance(config.get(f"reference_{key}"), str):
                mapping[value] = config[f"reference_{key}"]
        if isinstance(config.get("pred_image"), str) and isinstance(config.get("ref_image"), str):
            mapping[config["pred_image"]] = config["ref_image"]
    return mapping


def _ref_candidates(name: str) -> list[str]:
    path = Path(name)
    stem, suffix, parent = path.stem, path.suffix, path.parent
    out = [(parent / f"{stem}_ref{suffix}").as_posix(), (parent / f"ref_{stem}{suffix}").as_posix(),
           (parent / f"{stem}_reference{suffix}").as_posix()]
    if str(parent) != ".":
        out += [f"{stem}{suffix}", f"{stem}_ref{suffix}"]
    return out


def _place(name: str, target: Path, ref_dir: Path, mapping: dict[str, str], figure: bool) -> bool:
    mapped = mapping.get(name)
    # Stricter than upstream: a scorer pair whose reference has another file type (a .json
    # summary read alongside a .npy prediction) cannot stand in for the prediction.
    if mapped and Path(mapped).suffix != Path(name).suffix:
        mapped = None
    candidates = [mapped, name, *_ref_candidates(name)]
    if not figure:
        candidates += [Path(name).name, f"{Path(name).stem}_ref{Path(name).suffix}"]
    for candidate in candidates:
        if candidate and (ref_dir / candidate).is_file():
            shutil.copyfile(ref_dir / candidate, target)
            return True
    stem, suffix = Path(name).stem, Path(name).suffix
    if figure:
        pool = [p for ext in (".png", ".jpg", ".jpeg", ".svg", ".pdf") for p in sorted(ref_dir.rglob(f"*{ext}"))
                if stem in p.stem]
    else:
        pool = [p for p in sorted(ref_dir.rglob("*"))
                if p.suffix == suffix and (stem in p.stem or p.stem in stem)]
    for path in pool:
        if path.is_file():
            shutil.copyfile(path, target)
            return True
    return False


def _placeholder_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\xff\xff")) + chunk(b"IEND", b""))


def build_selfcheck_prediction(instance: Path, pred: Path, task: dict[str, Any]) -> list[str]:
    """A prediction dir a perfect agent would produce: data/ + reference files under output names."""
    warnings: list[str] = []
    ref_dir = instance / "reference"
    if (instance / "data").is_dir():
        shutil.copytree(instance / "data", pred / "data")
    evaluation = mapping_at(task, "evaluation")
    mapping = pred_ref_mapping(evaluation)
    output = mapping_at(task, "output")
    for entry in output.get("files") or []:
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        name, kind = str(entry["name"]), str(entry.get("type") or "data")
        target = pred / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "code":
            shutil.copyfile(Path(task["_task_dir"]) / "generate_gt.py", target)
        elif kind == "figure":
            if not _place(name, target, ref_dir, mapping, figure=True):
                target.write_bytes(_placeholder_png())
                warnings.append(f"figure {name}: no reference image, using a placeholder")
        elif not _place(name, target, ref_dir, mapping, figure=False):
            warnings.append(f"output {name}: no matching reference file")
    for pred_name, ref_name in mapping.items():
        if not (pred / pred_name).exists() and (ref_dir / ref_name).is_file():
            (pred / pred_name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ref_dir / ref_name, pred / pred_name)
    mapped = set(mapping.values())
    for src in sorted(ref_dir.rglob("*")):
        rel = src.relative_to(ref_dir).as_posix()
        if src.is_file() and not src.stem.endswith("_ref") and rel not in mapped and not (pred / rel).exists():
            (pred / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, pred / rel)
    return warnings


def _selfcheck_task_copy(task: dict[str, Any], evaluation: dict[str, Any], dest: Path) -> Path:
    """A copy of the task dir whose evaluation is the stripped one (the engine loads from disk)."""
    source = Path(task["_task_dir"])
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".git", "__pycache__", "reference"))
    for name in ("task.yaml", "task_eval.yaml", "task_meta.yaml"):
        path = dest / name
        if not path.is_file():
            continue
        data = untrusted_yaml_load(path.read_text(encoding="utf-8")) or {}
        if isinstance(data, dict) and "evaluation" in data:
            data["evaluation"] = evaluation
            path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
            break
    return dest


def _model_judge(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("scorer") in JUDGE_SCORERS and not (
        entry.get("scorer") == "multimodal" and mapping_at(entry, "config").get("mode") == "pixel_sim")


def judges_config_check(task: dict[str, Any]) -> Check | None:
    """The task's judge entries, checked before anything runs: a model that routes, a usable rubric,
    sane numbers (None when the task has no judge scorer)."""
    evaluation = mapping_at(task, "evaluation")
    entries = [e for key in ("gates", "scoring") for e in evaluation.get(key) or []
               if isinstance(e, dict) and (e.get("scorer") in JUDGE_SCORERS or e.get("scorer") == "composite")]
    problems = judge_config_problems(evaluation)
    if not entries:
        return None
    # The ceiling the Portal's workers and local scoring apply (ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT, default
    # 1800 s): a longer timeout is clamped, not refused.
    clamped = [f"[warning] {note}" for note in
               agent_judge_timeout_notes(evaluation, agent_judge_ceiling(os.environ), "the scoring")]
    if problems:
        return Check("judges", False, f"{len(problems)} problem(s) with the judge scorers", problems + clamped)
    return Check("judges", True, "every judge scorer names a model that routes and a usable rubric", clamped)


def run_judge_selfcheck(task: dict[str, Any], instance: Path, pred: Path, params: dict[str, Any], work: Path,
                        timeout: float, environ: Any = None) -> Check | None:
    """The reference fed to the task's model judges, when an endpoint is configured: each judge must
    accept it (its normalized score reaches its threshold). Without an endpoint the check says so."""
    evaluation = mapping_at(task, "evaluation")
    judged = [e for e in evaluation.get("scoring") or [] if _model_judge(e)]
    if not judged:
        return None
    points = sum(float(e.get("weight", 1.0)) for e in judged)
    endpoint, why = endpoint_status(environ)
    if endpoint is None:
        return Check("gt_selfcheck_judges", None, f"not run: {why}",
                     [f"[info] {points:g} points of model judges ({len(judged)} scorer(s)) were not checked"])
    task_copy = _selfcheck_task_copy(task, {**copy.deepcopy(evaluation), "scoring": copy.deepcopy(judged)},
                                     work / "judges-task" / Path(task["_task_dir"]).name)
    params_file = work / "judges-params.json"
    params_file.write_text(json.dumps(params), encoding="utf-8")

    def argv_for(book: Path | None) -> list[str]:
        return score_argv([sys.executable], task_dir=task_copy, pred_dir=pred, ref_dir=instance / "reference",
                          params=f"@{params_file}", judge_book=book)

    result = score_with_judges(lambda book: run_engine(work, argv_for, timeout, book), pred_dir=pred,
                               ref_dir=instance / "reference", environ=environ)
    if result.get("evaluation_status") != "completed":
        return Check("gt_selfcheck_judges", False, f"the judges could not score the reference: {result.get('error')}",
                     [why])
    details, ok = [why], bool(result.get("hard_gates_passed"))
    for entry in result.get("score_results") or []:
        info = entry.get("details") or {}
        reasons = [r for r in info.get("reasonings") or [] if r]
        details.append(f"{entry.get('scorer_name')}: {entry.get('score'):.4g}/{entry.get('max_score'):.4g} "
                       f"(median {info.get('median_score')}, threshold {info.get('threshold')})"
                       + (f" — {reasons[0][:200]}" if reasons else ""))
        ok = ok and bool(entry.get("passed"))
    summary = (f"the judges give the reference {float(result.get('final_score') or 0):.4g}/{points:g}"
               + ("" if ok else "; a judge does not accept the reference (check its rubric and max_score_value)"))
    return Check("gt_selfcheck_judges", ok, summary, details)


def run_selfcheck(task: dict[str, Any], instance: Path, params: dict[str, Any], work: Path,
                  timeout: float) -> Check:
    evaluation = mapping_at(task, "evaluation")
    stripped, skipped = strip_for_selfcheck(evaluation)
    pred = work / "pred"
    pred.mkdir()
    details = [f"[warning] {w}" for w in build_selfcheck_prediction(instance, pred, task)]
    if skipped:
        details.append(f"[info] skipped {skipped:g} points of agent-only scorers "
                       "(LLM judges, code_analysis, skip_in_gt_selfcheck)")
    task_copy = _selfcheck_task_copy(task, stripped, work / "task" / Path(task["_task_dir"]).name)
    params_file = work / "params.json"
    params_file.write_text(json.dumps(params), encoding="utf-8")

    def argv_for(book: Path | None) -> list[str]:
        return score_argv([sys.executable], task_dir=task_copy, pred_dir=pred, ref_dir=instance / "reference",
                          params=f"@{params_file}", judge_book=book)

    # A custom scorer may ask a model itself: that goes to the configured endpoint, or the result says why not.
    result = score_with_judges(lambda book: run_engine(work, argv_for, timeout, book), pred_dir=pred,
                               ref_dir=instance / "reference")
    if result.get("failure_kind") == "evaluator_runtime_error" and not result.get("gate_results") \
            and not result.get("score_results"):
        return Check("gt_selfcheck", False, f"scorer process failed: {result.get('error')}", details)
    final, maximum = result.get("final_score"), float(result.get("max_score") or 0.0)
    for gate in result.get("gate_results") or []:
        if not gate.get("passed"):
            details.append(f"gate {gate.get('scorer_name')} ({gate.get('severity')}): {gate.get('message')}")
    for entry in result.get("score_results") or []:
        if float(entry.get("score") or 0.0) < float(entry.get("max_score") or 0.0):
            details.append(f"scorer {entry.get('scorer_name')}: {entry.get('score'):.4g}/"
                           f"{entry.get('max_score'):.4g} — {entry.get('message')}")
    if result.get("evaluation_status") != "completed" or final is None:
        return Check("gt_selfcheck", False,
                     f"evaluation invalid ({result.get('failure_kind')}): {result.get('error') or ''}".strip(), details)
    passed = bool(result.get("hard_gates_passed")) and (maximum == 0 or abs(float(final) - maximum) < 0.01)
    summary = f"reference scores {float(final):.4g}/{maximum:.4g}"
    if not result.get("hard_gates_passed"):
        summary += " (hard gate failed)"
    return Check("gt_selfcheck", passed, summary, details)


# ---------------------------------------------------------------- the checks in order
def portal_check(why: str) -> str:
    """The label of a failure the official pre-submit would not report, with why the Portal needs it."""
    return f"({PORTAL_CHECK}: {why})"


def _required_files(task_dir: Path, task: dict[str, Any] | None) -> Check:
    missing = []
    if not (task_dir / "task_meta.yaml").is_file() and not (task_dir / "task.yaml").is_file():
        missing.append("task_meta.yaml")
    if (task_dir / "task_meta.yaml").is_file() and not (task_dir / "task.yaml").is_file() \
            and not (task_dir / "task_eval.yaml").is_file():
        missing.append(f"task_eval.yaml {portal_check('the Portal reads the scoring contract from it')}")
    if not (task_dir / "generate_gt.py").is_file():
        missing.append("generate_gt.py")
    prompts = mapping_at(task, "prompts")
    for level in PROMPT_LEVELS:
        name = str(prompts.get(level) or f"prompt_{level}.md")
        if not (task_dir / name).is_file():
            # The official checks ask for b4 only when the task declares it.
            ours = level == "b4" and not prompts.get("b4")
            missing.append(f"{name} {portal_check('the Portal serves all four levels')}" if ours else name)
    if missing:
        return Check("required_files", False, f"missing: {', '.join(missing)}")
    return Check("required_files", True, "task_meta/task_eval, generate_gt.py and prompts b1–b4 present")


def _task_id_check(task_dir: Path, task: dict[str, Any] | None) -> tuple[Check, list[str]]:
    """The id check and its warnings (a directory named other than the task, as the official checks warn)."""
    if task is None:
        return Check("task_id", False, "task metadata could not be loaded"), []
    task_id = str(task.get("id") or "")
    problems, warnings = [], []
    if not PORTAL_TASK_ID_RE.match(task_id):
        problems.append(f"id {task_id!r} must match {PORTAL_TASK_ID_RE.pattern} (lowercase <domain>.<name>) "
                        f"{portal_check('the catalog id rule')}")
    else:
        domain, name = task_id.split(".")
        if task.get("domain") != domain:
            problems.append(f"id prefix {domain!r} differs from domain {task.get('domain')!r}")
        if task_dir.resolve().name != name:
            warnings.append(f"directory name {task_dir.resolve().name!r} differs from task name {name!r}")
    if problems:
        return Check("task_id", False, problems[0], problems[1:]), warnings
    return Check("task_id", True, task_id), warnings


def _introspect(task_dir: Path, timeout: float) -> tuple[Check, dict[str, Any]]:
    argv = [sys.executable, "-c", _INTROSPECT, str(task_dir / "generate_gt.py")]
    try:
        done = subprocess.run(argv, cwd=task_dir, capture_output=True, text=True, timeout=timeout,
                              env=_subprocess_env(), check=False)
    except subprocess.TimeoutExpired:
        return Check("generator_contract", False, f"importing generate_gt.py took over {timeout:g} s"), {}
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Check("generator_contract", False, "cannot import generate_gt.py", [_tail(done.stderr)]), {}
    # Ours, not the official pre-submit's (it imports generate_gt.py and falls back to running it as a
    # script): the declared contract is advice for a proposal, so a gap is a warning, never a failure.
    missing = [name for name, present in (("generate()", info.get("generate")),
                                          ("DEFAULT_PARAMS", isinstance(info.get("default_params"), dict)),
                                          ("INPUT_SPEC", info.get("input_spec") is not None),
                                          ("OUTPUT_SPEC", info.get("output_spec") is not None)) if not present]
    if missing:
        return Check("generator_contract", True, "generate_gt.py imports",
                     [f"warning ({PORTAL_CHECK}): it lacks {', '.join(missing)}"]), info
    return Check("generator_contract", True, "generate, DEFAULT_PARAMS, INPUT_SPEC, OUTPUT_SPEC present"), info


def _io_agreement(task: dict[str, Any], info: dict[str, Any]) -> list[str]:
    warnings = []
    inputs = [str(e.get("name")) for e in ((task.get("input") or {}).get("files") or []) if isinstance(e, dict)]
    outputs = [str(e.get("name")) for e in ((task.get("output") or {}).get("files") or [])
               if isinstance(e, dict) and e.get("type") != "code"]
    if info.get("input_spec") is not None and info.get("input_spec") != inputs:
        warnings.append(f"INPUT_SPEC {info.get('input_spec')} differs from input.files {inputs}")
    if info.get("output_spec") is not None and info.get("output_spec") != outputs:
        warnings.append(f"OUTPUT_SPEC {info.get('output_spec')} differs from non-code output.files {outputs}")
    return warnings


OFFICIAL_SEEDS = (42, 31415)  # seed42: references private; seed31415: references public


def official_seeds_check(task_dir: Path, task: dict[str, Any], work: Path, timeout: float) -> Check:
    """The two datasets' references must differ, or the public one reveals the private one."""
    instances = []
    for seed in OFFICIAL_SEEDS:
        out = work / f"official_seed{seed}"
        try:
            generator_run_local(task_dir, out, sample_params(task, seed), timeout)
        except (GeneratorFailed, TaskDefinitionError) as exc:
            return Check("official_seeds", False, f"generation for seed{seed} failed: {exc} "
                         + portal_check("the Portal generates both datasets"))
        instances.append(out)
    if not tree_differences(instances[0], instances[1], under="reference"):
        return Check("official_seeds", False,
                     "the seed42 and seed31415 references are byte-identical, so the public seed31415 references "
                     "would reveal the private seed42 ones; make the generator depend on the seed "
                     + portal_check("the Portal publishes the seed31415 references"))
    return Check("official_seeds", True, "the seed42 and seed31415 references differ")


def validate_task_dir(task_dir: Path, *, generator_timeout: float | None = None,
                      scorer_timeout: float = 300.0) -> ValidationReport:
    """Every pre-submit check for `task_dir`; never raises for a bad task, only reports it."""
    task_dir = Path(task_dir).resolve()
    report = ValidationReport(task_dir=task_dir)
    if not task_dir.is_dir():
        report.checks.append(Check("static", False, f"{task_dir} is not a directory"))
        return report

    errors, warnings = static_validate(task_dir)
    report.warnings.extend(warnings)
    report.checks.append(Check("static", not errors, "no errors" if not errors else f"{len(errors)} error(s)",
                               errors))
    try:
        task: dict[str, Any] | None = load_task(task_dir)
    except TaskDefinitionError:
        task = None
    report.task_id = str(task.get("id")) if task and task.get("id") else None
    report.checks.append(_required_files(task_dir, task))
    id_check, id_warnings = _task_id_check(task_dir, task)
    report.checks.append(id_check)
    report.warnings.extend(id_warnings)
    judges = judges_config_check(task) if task is not None else None
    if judges is not None:
        report.checks.append(judges)
    submission = task_dir / "task_submission.yaml"
    if not submission.is_file():
        report.warnings.append("task_submission.yaml is missing (`asibench task submit` requires it)")

    generation = mapping_at(task, "generation")
    timeout = float(generator_timeout or generation.get("timeout_seconds") or 300)
    if task is None or not (task_dir / "generate_gt.py").is_file() or errors:
        reason = "static errors" if errors else "no loadable task or generate_gt.py"
        for name in ("generator_contract", "determinism", "seeds", "official_seeds", "gt_selfcheck"):
            report.checks.append(Check(name, None, f"skipped ({reason})"))
        return report

    contract, info = _introspect(task_dir, timeout)
    report.checks.append(contract)
    if not contract.ok:
        for name in ("determinism", "seeds", "official_seeds", "gt_selfcheck"):
            report.checks.append(Check(name, None, "skipped (generator contract)"))
        return report
    report.warnings.extend(_io_agreement(task, info))

    with tempfile.TemporaryDirectory(prefix="asibench_validate_") as tmp:
        work = Path(tmp)
        try:
            params = preflight_params(task, info.get("default_params") or {})
            first = work / "gen_a"
            meta = generator_run_local(task_dir, first, params, timeout)
            generator_run_local(task_dir, work / "gen_b", params, timeout)
        except GeneratorFailed as exc:
            report.checks.append(Check("determinism", False, str(exc)))
            for name in ("seeds", "official_seeds", "gt_selfcheck"):
                report.checks.append(Check(name, None, "skipped (generation failed)"))
            return report
        diffs = tree_differences(first, work / "gen_b")
        report.checks.append(Check(
            "determinism", not diffs,
            f"two runs with {json.dumps(params, sort_keys=True)} are byte-identical" if not diffs
            else f"two runs with the same parameters differ in {len(diffs)} file(s): {', '.join(diffs[:5])} "
                 + portal_check("the catalog generates every instance twice and keeps it only when both agree"),
            diffs[5:]))

        seed_details, seed_ok = [], True
        for seed in extra_seeds(int(params.get("seed", 42)) if str(params.get("seed", "")).isdigit() else 42):
            try:
                generator_run_local(task_dir, work / f"seed_{seed}", {**params, "seed": seed}, timeout)
                seed_details.append(f"seed {seed}: ok")
            except GeneratorFailed as exc:
                seed_ok = False
                seed_details.append(f"seed {seed}: {exc}")
        report.checks.append(Check("seeds", seed_ok, "generates with two more seeds" if seed_ok
                                   else "generation failed for another seed", seed_details))

        report.checks.append(official_seeds_check(task_dir, task, work, timeout))

        used: dict[str, Any] = meta["params_used"] if isinstance(meta.get("params_used"), dict) else params
        selfcheck_work = work / "selfcheck"
        selfcheck_work.mkdir()
        report.checks.append(run_selfcheck(task, first, used, selfcheck_work, scorer_timeout))
        if judges is not None and judges.ok:
            judged = run_judge_selfcheck(task, first, selfcheck_work / "pred", used, selfcheck_work, scorer_timeout)
            if judged is not None:
                report.checks.append(judged)
    return report
