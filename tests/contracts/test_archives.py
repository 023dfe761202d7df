"""Packing and unpacking our archives on every supported Python (3.11.2 has no tarfile extraction filters)."""

import io
import stat
import tarfile
from pathlib import Path

import pytest

from contracts.archives import UnsafeArchive, extract_tree, pack_files


def archive(tmp_path: Path, *members: tarfile.TarInfo, data: bytes = b"hello") -> Path:
    path = tmp_path / "a.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            if info.isreg():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, linkname
    return info


def unpack(path: Path, dest: Path, **kwargs: object) -> None:
    with tarfile.open(path, "r:gz") as tar:
        extract_tree(tar, dest, **kwargs)  # type: ignore[arg-type]


def test_it_unpacks_directories_and_files_with_plain_modes(tmp_path: Path) -> None:
    path = archive(tmp_path, member("top", tarfile.DIRTYPE, 0o700), member("top/data/x.csv", mode=0o600),
                   member("top/run.sh", mode=0o4755))
    unpack(path, tmp_path / "out")
    assert (tmp_path / "out/top/data/x.csv").read_bytes() == b"hello"
    assert stat.S_IMODE((tmp_path / "out/top/data/x.csv").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "out/top/run.sh").stat().st_mode) == 0o755  # never setuid
    assert stat.S_IMODE((tmp_path / "out/top").stat().st_mode) == 0o755


def test_it_unpacks_only_the_selected_members(tmp_path: Path) -> None:
    path = archive(tmp_path, member("top/data/x.csv"), member("top/reference/y.csv"))
    unpack(path, tmp_path / "out", select=lambda name: name.startswith("top/data/"))
    assert [p.relative_to(tmp_path / "out").as_posix() for p in sorted((tmp_path / "out").rglob("*"))] == [
        "top", "top/data", "top/data/x.csv"]


@pytest.mark.parametrize("bad", [
    member("top/link", tarfile.SYMTYPE, linkname="/etc/passwd"),
    member("top/hard", tarfile.LNKTYPE, linkname="top/x"),
    member("top/dev", tarfile.CHRTYPE),
    member("top/fifo", tarfile.FIFOTYPE),
    member("/etc/evil"),
    member("top/../../evil"),
], ids=["symlink", "hardlink", "device", "fifo", "absolute", "dotdot"])
def test_it_refuses_every_other_member_and_writes_nothing_outside(tmp_path: Path, bad: tarfile.TarInfo) -> None:
    path = archive(tmp_path, bad)
    with pytest.raises(UnsafeArchive, match="top|etc"):
        unpack(path, tmp_path / "out")
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()
    assert not (tmp_path / "out/top/link").exists()


def test_a_path_met_twice_is_refused_rather_than_overwritten(tmp_path: Path) -> None:
    path = archive(tmp_path, member("top/x"), member("top/./x"))
    with pytest.raises(UnsafeArchive, match="twice"):
        unpack(path, tmp_path / "out")


def test_packing_depends_on_the_content_alone_and_unpacks_with_extract_tree(tmp_path: Path) -> None:
    files = {"tasks/b/x/task_meta.yaml": b"id: b.x\n", "tasks/README.txt": b"read me\n", "tasks/a/y/p.md": b""}
    packed = pack_files(files)
    assert pack_files(dict(reversed(list(files.items())))) == packed  # insertion order does not matter
    assert pack_files({**files, "tasks/README.txt": b"read me!\n"}) != packed
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == ["tasks", "tasks/a", "tasks/a/y", "tasks/b", "tasks/b/x",
                                             "tasks/README.txt", "tasks/a/y/p.md", "tasks/b/x/task_meta.yaml"]
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    path = tmp_path / "packed.tar.gz"
    path.write_bytes(packed)
    unpack(path, tmp_path / "out")
    assert {p.relative_to(tmp_path / "out").as_posix(): p.read_bytes()
            for p in (tmp_path / "out").rglob("*") if p.is_file()} == files
    assert packed[4:8] == b"\0\0\0\0"  # no time in the gzip header either


@pytest.mark.parametrize("files", [{"../x": b""}, {"/etc/x": b""}, {"a": b"", "a/b": b""}, {"a/b": b"", "a//b": b""}])
def test_packing_refuses_names_that_would_not_unpack_as_given(files: dict[str, bytes]) -> None:
    with pytest.raises(UnsafeArchive):
        pack_files(files)
