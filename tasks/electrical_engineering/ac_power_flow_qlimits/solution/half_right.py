"""Half-right baseline: a correct AC power flow that ignores the generators' reactive
limits (every PV bus keeps its voltage set point whatever reactive power that needs).

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from solve import power_flow, write


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    write(ws, power_flow(json.loads((ws / "data" / "case.json").read_text()), enforce_limits=False))


if __name__ == "__main__":
    main()
