"""Reference solver for the cache task (agent-style, independent of the generator).

Direct simulation of every cache: one LRU-ordered dictionary per set (move to end on a
hit, evict the first entry on a miss into a full set).  Compulsory misses are the
distinct lines; capacity misses come from simulating a fully associative LRU cache of
the same capacity and line size.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from collections import OrderedDict
from pathlib import Path

import numpy as np


def lru_misses(lines: list[int], n_sets: int, ways: int) -> int:
    sets = [OrderedDict() for _ in range(n_sets)]
    misses = 0
    for line in lines:
        s = sets[line % n_sets]
        if line in s:
            s.move_to_end(line)
            continue
        misses += 1
        if len(s) >= ways:
            s.popitem(last=False)
        s[line] = None
    return misses


def classify(trace: np.ndarray, configs: list[dict], simulate=lru_misses) -> tuple[np.ndarray, np.ndarray]:
    totals, classes = [], []
    for c in configs:
        line_bytes, ways = c["line_bytes"], c["associativity"]
        n_sets = c["capacity_bytes"] // (line_bytes * ways)
        lines = (trace // line_bytes).tolist()
        total = simulate(lines, n_sets, ways)
        fully = simulate(lines, 1, c["capacity_bytes"] // line_bytes)
        compulsory = len(set(lines))
        totals.append(total)
        classes.append([compulsory, fully - compulsory, total - fully])
    return np.array(totals, dtype=np.float64), np.array(classes, dtype=np.float64)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    trace = np.load(ws / "data" / "trace.npy")
    configs = json.loads((ws / "data" / "caches.json").read_text())["configs"]
    totals, classes = classify(trace, configs)
    np.save(ws / "miss_counts.npy", totals)
    np.save(ws / "miss_classes.npy", classes)


if __name__ == "__main__":
    main()
