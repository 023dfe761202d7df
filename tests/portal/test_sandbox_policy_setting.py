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
        cwd=REPO, env={**clean, "ASIBENCH_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings", **env},
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


def run_policy(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ASIBENCH_")}
    return subprocess.run(
        [sys.executable, "-c", "import django, json; django.setup(); from django.conf import settings; "
                               "print(json.dumps(settings.DATASET_RUN_POLICY, sort_keys=True))"],
        cwd=REPO, env={**clean, "ASIBENCH_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True, text=True,
    )


def test_each_dataset_has_its_run_policy_for_the_conformance_flags(tmp_path):
    import json

    default = json.loads(run_policy(tmp_path).stdout)
    # The official rule, whatever this Portal accepts (the local policy takes linux_ns for seed42).
    assert default == {"seed42": {"sandbox_modes": ["os"], "client_versions": ["0.2.0"], "external_tools": False},
                       "seed31415": {"sandbox_modes": ["os", "linux_ns", "none"], "client_versions": ["0.2.0"],
                                     "external_tools": False}}
    both = json.loads(run_policy(tmp_path, ASIBENCH_CLIENT_VERSIONS="0.2.0,0.2.1").stdout)
    assert both["seed42"]["client_versions"] == both["seed31415"]["client_versions"] == ["0.2.0", "0.2.1"]
    one = json.loads(run_policy(tmp_path, ASIBENCH_SEED31415_CLIENT_VERSIONS="0.3.0").stdout)
    assert one["seed42"]["client_versions"] == ["0.2.0"] and one["seed31415"]["client_versions"] == ["0.3.0"]
    tools = json.loads(run_policy(tmp_path, ASIBENCH_SEED31415_EXTERNAL_TOOLS="true").stdout)
    assert (tools["seed42"]["external_tools"], tools["seed31415"]["external_tools"]) == (False, True)
