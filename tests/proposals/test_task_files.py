"""The shared file rules (contracts/task_files.py), as the client applies them."""

import os
import unicodedata

import pytest

from contracts.task_files import (
    MAX_TASK_BYTES,
    TaskFileError,
    check_file_set,
    check_incoming_name,
    collect_task_files,
    os_evidence_error,
    snapshot_token,
)


def test_collection_skips_hidden_and_ignored_paths_and_normalises_to_nfc(tmp_path):
    for rel in (".env", ".git/config", "results/r.json", "reference/x.npy", "__pycache__/a.pyc", "data/results",
                "task_meta.yaml", "data/sub/x.csv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    decomposed = unicodedata.normalize("NFD", "café.md")
    (tmp_path / decomposed).write_text("x")
    names = [f.name for f in collect_task_files(tmp_path)]
    assert names == sorted(names) and set(names) == {"task_meta.yaml", "data/sub/x.csv", "café.md"}
    assert unicodedata.is_normalized("NFC", next(n for n in names if n.startswith("caf")))


@pytest.mark.parametrize(("setup", "code"), [
    (lambda d: os.symlink(d / "a.py", d / "b.py"), "symlink"),
    (lambda d: os.symlink(d, d / "loop"), "symlink"),
    (lambda d: (d / "tool.sh").write_text("x"), "file_type"),
    (lambda d: (d / "README").write_text("x"), "file_type"),
    (lambda d: (d / "big.npy").write_bytes(b"\0" * (10 * 1024 * 1024 + 1)), "file_too_large"),
])
def test_collection_refuses_what_the_portal_would_refuse(tmp_path, setup, code):
    (tmp_path / "a.py").write_text("x")
    setup(tmp_path)
    with pytest.raises(TaskFileError) as refused:
        collect_task_files(tmp_path)
    assert refused.value.code == code


def test_set_limits_and_incoming_names():
    with pytest.raises(TaskFileError, match="at most 1000"):
        check_file_set({f"f{i}.txt": 1 for i in range(1001)})
    with pytest.raises(TaskFileError, match=f"total at most {MAX_TASK_BYTES}"):
        check_file_set({f"f{i}.npy": 10 * 1024 * 1024 for i in range(11)})
    assert check_incoming_name("data/nested/input.csv") == "data/nested/input.csv"
    for bad in ("../x.py", "a/./b.py", "/abs.py", "a\\b.py", "results/x.csv", ".hidden.md", ""):
        with pytest.raises(TaskFileError):
            check_incoming_name(bad)
    assert len(snapshot_token({})) == 64 and snapshot_token({"a": "1"}) != snapshot_token({"a": "2"})


def test_os_evidence_rules():
    ok = {"local_testing_done": True, "local_test_results": [{"sandbox": "os", "agent": "codex_cli"}]}
    assert os_evidence_error(ok) is None
    assert "local_testing_done" in os_evidence_error({**ok, "local_testing_done": "true"})
    assert "[0] must set sandbox: os" in os_evidence_error({**ok, "local_test_results": [{"agent": "codex_cli"}]})
    assert "multi-turn" in os_evidence_error({**ok, "local_test_results": [{"sandbox": "os", "agent": "direct_llm"}]})
