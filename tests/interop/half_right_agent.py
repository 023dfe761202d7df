"""Test-only agent: runs the task's `solution/half_right.py`, whose answer earns partial credit."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "agents"))
from _common import run_agent  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_agent("half_right.py"))
