"""Example agent that runs the matching task's naive baseline (``solution/naive.py``).

Usage: python examples/agents/naive_agent.py --workspace {workspace} [--tasks-dir DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no caches next to the example agents
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_agent  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_agent("naive.py"))
