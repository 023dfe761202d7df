"""Hostile-header benchmark: how long the streaming verifier takes to refuse each hostile bundle.

    .venv/bin/python bench/bundle_hostile.py [--repeat 5]

For every bundle in tests/hostile_bundles.py (negative and absurd PAX sizes, quadratic PAX records,
tens of thousands of path components, thousands of nested directories, hostile result.json and
manifest.json) it prints the compressed size, the reason code and the best and worst wall time of
`verify_bundle_stream` over --repeat runs, plus the worst case over all of them. The issue's target
is "well under a second" for each.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from portal.submissions.bundle_verify import BundleLimits, BundleRejected, verify_bundle_stream  # noqa: E402
from tests.hostile_bundles import HOSTILE  # noqa: E402


def refuse(data: bytes) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        verify_bundle_stream(io.BytesIO(data), io.BytesIO(), BundleLimits(), lambda iid: True, {"os"},
                             lambda task_id: [])
    except BundleRejected as exc:
        return exc.code, time.perf_counter() - started
    return "ACCEPTED", time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'bundle':40s} {'bytes':>8s}  {'reason':18s} {'best ms':>8s} {'worst ms':>9s}")
    worst_all = 0.0
    for name, (build, expected) in HOSTILE.items():
        data = build()
        runs = [refuse(data) for _ in range(args.repeat)]
        codes = {code for code, _ in runs}
        times = [seconds for _, seconds in runs]
        worst_all = max(worst_all, max(times))
        flag = "" if codes == {expected} else f"  (expected {expected})"
        print(f"{name:40s} {len(data):>8d}  {','.join(sorted(codes)):18s} {min(times) * 1e3:>8.1f} "
              f"{max(times) * 1e3:>9.1f}{flag}")
    print(f"worst refusal over all hostile bundles: {worst_all * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
