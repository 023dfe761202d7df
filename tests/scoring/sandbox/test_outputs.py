"""The link-safe reader of sandbox outputs, on trees laid out the way hostile code could leave them."""

import os
from pathlib import Path

import pytest

from scoring.sandbox.outputs import MAX_DEPTH, UnsafeOutput, collect_outputs, read_output_file


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "host" / "secret.txt"
    path.parent.mkdir()
    path.write_text("host secret")
    return path


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "sub" / "a.txt").write_text("a")
    (root / "reference").mkdir()
    (root / "reference" / "r.json").write_text("{}")
    return root


def test_it_copies_regular_files_into_a_fresh_directory(tmp_path):
    copied = collect_outputs(tree(tmp_path), tmp_path / "copy")
    assert copied == {"data/": 0, "data/sub/": 0, "data/sub/a.txt": 1, "reference/": 0, "reference/r.json": 2}
    assert (tmp_path / "copy" / "data" / "sub" / "a.txt").read_text() == "a"
    with pytest.raises(FileExistsError):
        collect_outputs(tree(tmp_path / "again"), tmp_path / "copy")  # never into an existing directory


@pytest.mark.parametrize(("plant", "named", "kind"), [
    (lambda root, secret: (root / "data" / "leak.txt").symlink_to(secret), "data/leak.txt", "symbolic link"),
    (lambda root, secret: (root / "data" / "up").symlink_to(".."), "data/up", "symbolic link"),
    (lambda root, secret: os.link(root / "data" / "sub" / "a.txt", root / "data" / "b.txt"), "data/b.txt",
     "hard link"),
    (lambda root, secret: os.mkfifo(root / "reference" / "pipe"), "reference/pipe", "FIFO"),
])
def test_it_refuses_links_and_special_files_by_name(tmp_path, secret, plant, named, kind):
    root = tree(tmp_path)
    plant(root, secret)
    with pytest.raises(UnsafeOutput) as refused:
        collect_outputs(root, tmp_path / "copy")
    assert named in str(refused.value) and kind in str(refused.value)


def test_a_linked_root_is_refused(tmp_path, secret):
    (tmp_path / "out").symlink_to(secret.parent)
    with pytest.raises(UnsafeOutput, match="not a plain directory"):
        collect_outputs(tmp_path / "out", tmp_path / "copy")


def test_deep_nesting_is_refused_without_exhausting_the_host(tmp_path):
    root = tmp_path / "out"
    deep = root.joinpath(*["d"] * (MAX_DEPTH + 5))
    deep.mkdir(parents=True)
    with pytest.raises(UnsafeOutput, match=f"deeper than {MAX_DEPTH}"):
        collect_outputs(root, tmp_path / "copy")


def test_read_output_file_follows_no_link_on_the_way(tmp_path, secret):
    root = tree(tmp_path)
    assert read_output_file(root, "reference/r.json", max_bytes=10) == b"{}"
    (root / "hop").symlink_to(secret.parent)
    (root / "data" / "s.txt").symlink_to(secret)
    for rel in ("hop/secret.txt", "data/s.txt", "../host/secret.txt"):
        with pytest.raises(UnsafeOutput):
            read_output_file(root, rel, max_bytes=100)
    with pytest.raises(UnsafeOutput, match="larger than 0 bytes"):
        read_output_file(root, "data/sub/a.txt", max_bytes=0)
