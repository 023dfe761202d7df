"""The GT self-check: the reference, fed through the task's own scoring contract, must earn full marks."""

from __future__ import annotations

import copy
import json
import shutil
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import yaml

from cli_client.running.local_score import run_engine
from scoring.engine.cli import score_argv
from scoring.engine.safe_yaml import untrusted_yaml_load
from scoring.engine.taskdef import mapping_at
from scoring.judging.local import score_with_judges

from .report import Check

SELFCHECK_SKIPPED_SCORERS = frozenset({"multimodal", "llm_judge", "agent_judge", "code_analysis"})


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


def selfcheck_task_copy(task: dict[str, Any], evaluation: dict[str, Any], dest: Path) -> Path:
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
    task_copy = selfcheck_task_copy(task, stripped, work / "task" / Path(task["_task_dir"]).name)
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

