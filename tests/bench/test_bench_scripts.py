"""The bench scripts stay runnable: each prints its figures on a tiny input. Nothing here asserts a
speed (machines are noisy); the figures themselves are read from a full run of the script."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bundle_intake_prints_every_measurement_including_the_http_upload(tmp_path):
    run = subprocess.run(
        [sys.executable, "bench/bundle_intake.py", "--size-mb", "2", "--size-mb", "4", "--repeat", "2",
         "--workdir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    for label in ("(a) verifier", "(b) zlib one-pass", "(b') isal one-pass", "(c) tar+sha256",
                  "(d) HTTP upload [sendfile]"):
        assert out.count(label) == 2, (label, out)
    assert re.search(r"vs verifier alone: \d+\.\d\dx best/best .* \d+\.\d\dx median of rounds", out), out
    assert "verifier peak RSS across sizes" in out
    assert list(tmp_path.iterdir()) == [], "the bench leaves no archives or Portal state behind"
