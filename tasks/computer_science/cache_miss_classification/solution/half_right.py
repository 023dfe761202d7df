"""Half-right baseline: the right cache geometry and 3C bookkeeping, but FIFO
replacement (a hit does not refresh the line) instead of LRU.

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from collections import deque
from pathlib import Path

import numpy as np
from solve import classify


def fifo_misses(lines: list[int], n_sets: int, ways: int) -> int:
    queues = [deque() for _ in range(n_sets)]
    members: list[set[int]] = [set() for _ in range(n_sets)]
    misses = 0
    for line in lines:
        idx = line % n_sets
        if line in members[idx]:
            continue
        misses += 1
        if len(queues[idx]) >= ways:
            members[idx].discard(queues[idx].popleft())
        queues[idx].append(line)
        members[idx].add(line)
    return misses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    trace = np.load(ws / "data" / "trace.npy")
    configs = json.loads((ws / "data" / "caches.json").read_text())["configs"]
    totals, classes = classify(trace, configs, simulate=fifo_misses)
    np.save(ws / "miss_counts.npy", totals)
    np.save(ws / "miss_classes.npy", classes)


if __name__ == "__main__":
    main()
