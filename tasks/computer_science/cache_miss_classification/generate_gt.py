"""Instance generator for computer_science.cache_miss_classification.

Trace-driven simulation of set-associative LRU caches with the 3C miss classification
(compulsory / capacity / conflict; Hill & Smith 1989).  The address trace is a program
mix: a naive matrix multiply (strided column walks that alias in small caches), a
skewed random walk over a hash-table-like working set, and streaming sweeps.

The reference uses Mattson et al.'s (1970) LRU stack algorithm: one pass per
(line size, number of sets) yields per-set stack distances, from which the misses of
every associativity follow (a miss at associativity A <=> stack distance >= A).
Fully associative caches of the same capacity give the capacity misses.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

TASK_DIR = Path(__file__).resolve().parent

INPUT_SPEC = [
    {"name": "trace.npy", "type": "data", "description": "byte addresses of the memory references, in order"},
    {"name": "caches.json", "type": "json", "description": "cache configurations (capacity, line size, associativity)"},
]
OUTPUT_SPEC = [
    {"name": "miss_counts.npy", "type": "data"},
    {"name": "miss_classes.npy", "type": "data"},
]
DEFAULT_PARAMS = {"n_configs": 8, "matrix_n": 16, "hot_lines": 1500, "random_refs": 12000, "seed": 0}
CAPACITIES_KIB = (1, 2, 4, 8, 16)
LINE_BYTES = (16, 32, 64)
ASSOCIATIVITIES = (1, 2, 4, 8, 0)  # 0 = fully associative


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    for key in DEFAULT_PARAMS:
        p[key] = int(p[key])
    if p["n_configs"] < 1 or p["matrix_n"] < 2 or p["hot_lines"] < 1 or p["random_refs"] < 0:
        raise ValueError("bad parameters")
    return p


def make_trace(rng: np.random.Generator, p: dict) -> np.ndarray:
    n = p["matrix_n"]
    # three n x n float64 matrices; rows are padded to a power of two so columns alias
    row_bytes = 1 << int(np.ceil(np.log2(8 * n)))
    base_a, base_b, base_c = 0x100000, 0x200000, 0x300000
    i, j, k = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    i, j, k = i.ravel(), j.ravel(), k.ravel()
    mm = np.stack([base_a + i * row_bytes + 8 * k, base_b + k * row_bytes + 8 * j, base_c + i * row_bytes + 8 * j],
                  axis=1).ravel()
    # hash-table walk: Zipf-like popularity over `hot_lines` 64-byte buckets, random word inside
    ranks = np.arange(1, p["hot_lines"] + 1)
    weights = 1.0 / ranks**0.9
    buckets = rng.permutation(p["hot_lines"])[rng.choice(p["hot_lines"], p["random_refs"], p=weights / weights.sum())]
    walk = 0x800000 + buckets * 64 + 8 * rng.integers(0, 8, p["random_refs"])
    # two streaming passes over an array larger than every cache
    stream_len = int(rng.integers(3000, 6000))
    stream = 0xC00000 + 8 * np.arange(stream_len)
    parts = [mm[: len(mm) // 2], walk[: len(walk) // 2], stream, mm[len(mm) // 2:], walk[len(walk) // 2:], stream]
    return np.concatenate(parts).astype(np.int64)


def draw_configs(rng: np.random.Generator, count: int) -> list[dict]:
    seen, configs = set(), []
    while len(configs) < count:
        cap = int(rng.choice(CAPACITIES_KIB)) * 1024
        line = int(rng.choice(LINE_BYTES))
        assoc = int(rng.choice(ASSOCIATIVITIES))
        assoc = cap // line if assoc == 0 else assoc
        key = (cap, line, assoc)
        if key in seen:
            continue
        seen.add(key)
        configs.append({"capacity_bytes": cap, "line_bytes": line, "associativity": assoc,
                        "sets": cap // (line * assoc)})
    return configs


def stack_distance_misses(lines: np.ndarray, n_sets: int, assocs: list[int]) -> dict[int, int]:
    """Misses of LRU caches with `n_sets` sets for every associativity in `assocs` (Mattson stacks)."""
    depth = max(assocs)
    stacks: list[list[int]] = [[] for _ in range(n_sets)]
    hist = np.zeros(depth + 1, dtype=np.int64)  # hist[d] = references at stack distance d; hist[depth] = deeper/cold
    for line in lines.tolist():
        stack = stacks[line % n_sets]
        try:
            d = stack.index(line)
        except ValueError:
            d = depth
        else:
            del stack[d]
        hist[d] += 1
        stack.insert(0, line)
        if len(stack) > depth:
            stack.pop()
    return {a: int(hist[a:].sum()) for a in assocs}


def classify(trace: np.ndarray, configs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    groups: dict[tuple[int, int], set[int]] = {}
    for c in configs:
        groups.setdefault((c["line_bytes"], c["sets"]), set()).add(c["associativity"])
        groups.setdefault((c["line_bytes"], 1), set()).add(c["capacity_bytes"] // c["line_bytes"])
    misses = {key: stack_distance_misses(trace // key[0], key[1], sorted(assocs)) for key, assocs in groups.items()}
    totals, classes = [], []
    for c in configs:
        total = misses[(c["line_bytes"], c["sets"])][c["associativity"]]
        fully = misses[(c["line_bytes"], 1)][c["capacity_bytes"] // c["line_bytes"]]
        compulsory = len(np.unique(trace // c["line_bytes"]))
        totals.append(total)
        classes.append([compulsory, fully - compulsory, total - fully])
    return np.array(totals, dtype=np.float64), np.array(classes, dtype=np.float64)


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    trace = make_trace(rng, p)
    configs = draw_configs(rng, p["n_configs"])
    totals, classes = classify(trace, configs)

    np.save(data_dir / "trace.npy", trace)
    caches = {"configs": configs,
              "notes": "capacity and line size in bytes; sets = capacity / (line_bytes * associativity)"}
    (data_dir / "caches.json").write_text(json.dumps(caches, indent=2, sort_keys=True) + "\n")
    np.save(ref_dir / "miss_counts_ref.npy", totals)
    np.save(ref_dir / "miss_classes_ref.npy", classes)

    values = {"n_configs": p["n_configs"], "n_refs": len(trace)}
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")
    meta = {
        "params_used": p,
        "input_files": [s["name"] for s in INPUT_SPEC],
        "reference_files": ["miss_counts_ref.npy", "miss_classes_ref.npy"],
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def _render(text: str, values: dict) -> str:
    def repl(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"unknown prompt placeholder {key!r}")
        return str(values[key])

    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", repl, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
