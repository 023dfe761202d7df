"""ASIBENCH_SANDBOX_POLICY: `official` makes seed42 take only `os` runs; `local` (embedded) adds linux_ns."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def seed42_modes(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ASIBENCH_")}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                               "print(settings.SANDBOX_POLICY, ','.join(settings.DATASET_SANDBOX_MODES['seed42']))"],
        cwd=REPO, env={**clean, "ASIBENCH_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "portal.settings", **env},
        capture_output=True, text=True,
    )


def test_the_embedded_policy_is_local(tmp_path):
    done = seed42_modes(tmp_path)
    assert done.stdout.split() == ["local", "os,linux_ns"], done.stderr


def test_the_official_policy_takes_only_os_runs_for_seed42(tmp_path):
    done = seed42_modes(tmp_path, ASIBENCH_SANDBOX_POLICY="official")
    assert done.stdout.split() == ["official", "os"], done.stderr


def test_an_explicit_dataset_list_overrides_the_policy(tmp_path):
    done = seed42_modes(tmp_path, ASIBENCH_SANDBOX_POLICY="official", ASIBENCH_SEED42_SANDBOX_MODES="os,linux_ns")
    assert done.stdout.split() == ["official", "os,linux_ns"], done.stderr


def test_an_unknown_policy_is_refused_by_name(tmp_path):
    done = seed42_modes(tmp_path, ASIBENCH_SANDBOX_POLICY="strict")
    assert done.returncode != 0
    assert "ASIBENCH_SANDBOX_POLICY must be official or local, got 'strict'" in done.stderr
