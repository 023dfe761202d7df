"""The streaming bundle verifier the upload endpoint calls: every refusal has its reason code (contract §3.9)."""

import dataclasses
import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contracts.bundle import build_bundle, files_index, write_archive
from portal.submissions.bundle_verify import BundleLimits, BundleRejected, VerifiedBundle, verify_bundle_stream
from tests.hostile_bundles import HOSTILE
from tests.results_tree import LINUX_NS_SANDBOX, OS_SANDBOX, make_results, write_result

IID = "math.roots_demo__seed42"
KNOWN = {IID, "math.other__seed42"}
DECLARED = {"math.roots_demo": ["roots.npy", "solve.py"], "math.other": ["a.npy"],
            "chemistry.counterpoise_cbs_energies": ["energies.json"]}  # tests/hostile_bundles.py's task
B3, B3_RETRY, B4 = f"{IID}__b3", f"{IID}__b3__attempt2", f"{IID}__b4"


def verify(data: bytes, limits: BundleLimits | None = None, modes: set[str] | None = None,
           known: Any = KNOWN) -> tuple[VerifiedBundle, bytes]:
    sink = io.BytesIO()
    bundle = verify_bundle_stream(io.BytesIO(data), sink, limits or BundleLimits(), known,
                                  modes or {"os"}, lambda task_id: DECLARED[task_id])
    return bundle, sink.getvalue()


def refused(data: bytes, code: str, message: str | None = None, **kwargs: Any) -> BundleRejected:
    with pytest.raises(BundleRejected) as info:
        verify(data, **kwargs)
    assert info.value.code == code, info.value
    if message is not None:
        assert info.value.message == message
    return info.value


def archive_of(bundle_dir: Path) -> bytes:
    path = write_archive(bundle_dir, bundle_dir.with_name(bundle_dir.name + ".tar.gz"))
    return path.read_bytes()


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    build_bundle(make_results(tmp_path / "out"), tmp_path / "sub", note="team-x", benchmark_repo="seed42")
    return tmp_path / "sub"


def edit(bundle_dir: Path, change: Callable[[dict[str, Any]], None] | None = None, reindex: bool = False) -> bytes:
    """Rewrite the manifest (optionally re-indexing files so only the changed rule fails) and re-archive."""
    path = bundle_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    if reindex:
        manifest["files"] = files_index(bundle_dir)
    if change:
        change(manifest)
    path.write_text(json.dumps(manifest, indent=2))
    return archive_of(bundle_dir)


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]], fmt: int = tarfile.PAX_FORMAT,
           compress: Callable[[bytes], bytes] = gzip.compress) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return compress(raw.getvalue())


def member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


def with_extra(bundle_dir: Path, *extra: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    """The valid bundle's members followed by hand-made ones."""
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    with tarfile.open(fileobj=io.BytesIO(archive_of(bundle_dir)), mode="r:gz") as tar:
        for info in tar.getmembers():
            handle = tar.extractfile(info)
            members.append((info, handle.read() if handle else None))
    return tar_gz(members + list(extra))


# --- acceptance -------------------------------------------------------------------------------

def test_it_accepts_a_valid_bundle_with_the_right_summary(bundle_dir: Path) -> None:
    data = archive_of(bundle_dir)
    bundle, sink = verify(data)
    assert sink == data
    assert bundle.archive_sha256 == hashlib.sha256(data).hexdigest() and bundle.archive_bytes == len(data)
    assert bundle.top_dir == "sub" and bundle.integrity_ok is True
    assert (bundle.note, bundle.benchmark_repo, bundle.framework_version) == ("team-x", "seed42", "0.2.0")
    assert bundle.created_at and bundle.created_at.endswith("Z")
    assert bundle.instance_count == 3 and bundle.run_metadata_included
    assert [e.base_name for e in bundle.entries] == [B3, B3_RETRY, B4]
    assert bundle.incomplete_instances == [B4]
    first, retry, b4 = bundle.entries
    assert (first.instance_id, first.task_id, first.prompt_level, first.attempt, first.status) == (
        IID, "math.roots_demo", "b3", 1, "completed")
    assert retry.attempt == 2
    assert [o.path for o in first.outputs] == ["roots.npy", "solve.py", "nested/manifest.json"]
    assert first.outputs[1].sha256 == hashlib.sha256(b"print(1)\n").hexdigest() and first.outputs[1].bytes == 9
    assert first.outputs[0].member == f"instances/{B3}/outputs/roots.npy"
    assert first.provenance["sandbox"] == OS_SANDBOX
    assert first.provenance["agent"] == {"agent_name": "codex_cli", "adapter_class": "CodexCLIAdapter",
                                         "tool_mode": "restricted"}
    assert b4.missing_outputs == ["roots.npy"] and b4.timed_out_with_outputs and not first.timed_out_with_outputs
    assert "99.5" not in repr(bundle) and "score" not in json.dumps(dataclasses.asdict(bundle))


def test_it_accepts_linux_ns_when_the_dataset_policy_does(tmp_path: Path) -> None:
    build_bundle(make_results(tmp_path / "out", sandbox=LINUX_NS_SANDBOX), tmp_path / "sub")
    bundle, _ = verify(archive_of(tmp_path / "sub"), modes={"os", "linux_ns"})
    assert bundle.entries[0].provenance["sandbox"]["effective_mode"] == "linux_ns"


def test_it_takes_a_callable_for_known_instances(bundle_dir: Path) -> None:
    bundle, _ = verify(archive_of(bundle_dir), known=lambda iid: iid.startswith("math."))
    assert bundle.instance_count == 3


@pytest.mark.slow
def test_it_accepts_a_bundle_built_by_the_official_client(official_client: Path, tmp_path: Path) -> None:
    results = make_results(tmp_path / "out")
    out = tmp_path / "official.tar.gz"
    run = subprocess.run([str(official_client), "submit", "--results-dir", str(results), "--no-upload",
                          "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    bundle, sink = verify(out.read_bytes())
    assert sink == out.read_bytes()
    assert bundle.top_dir == "official" and bundle.instance_count == 3
    assert bundle.incomplete_instances == [B4]


# --- the archive itself -----------------------------------------------------------------------

def test_it_refuses_a_gzip_bomb_before_inflating_it(tmp_path: Path) -> None:
    bomb = tar_gz([(member("sub/instances/x/outputs/zeros.npy"), bytes(64 << 20))])
    err = refused(bomb, "ratio_exceeded", limits=BundleLimits(ratio_grace_bytes=1 << 20, max_ratio=50))
    assert "gzip bomb" in err.message


def test_it_refuses_a_body_over_the_compressed_cap_and_stops_reading() -> None:
    body = io.BytesIO(gzip.compress(bytes(range(256)) * 40_000, compresslevel=0))
    sink = io.BytesIO()
    with pytest.raises(BundleRejected) as info:
        verify_bundle_stream(body, sink, BundleLimits(max_compressed_bytes=1_500_000), KNOWN, {"os"}, list)
    assert info.value.code == "too_large"
    assert body.tell() <= 2 << 20 < len(body.getvalue()) and len(sink.getvalue()) <= 1_500_000


def test_it_refuses_an_uncompressed_total_over_the_cap(bundle_dir: Path) -> None:
    refused(archive_of(bundle_dir), "uncompressed_too_large", limits=BundleLimits(max_uncompressed_bytes=4096))


def test_it_refuses_an_oversized_file_at_its_header(bundle_dir: Path) -> None:
    refused(archive_of(bundle_dir), "file_too_large", limits=BundleLimits(max_file_bytes=100))


def test_it_refuses_too_many_members(bundle_dir: Path) -> None:
    refused(archive_of(bundle_dir), "too_many_members", limits=BundleLimits(max_members=5))


def test_it_refuses_a_body_that_is_not_gzip(bundle_dir: Path) -> None:
    plain = gzip.decompress(archive_of(bundle_dir))
    refused(plain, "not_gzip", "the upload is not a gzip-compressed tar archive (.tar.gz)")
    refused(b"", "not_gzip", "the upload is empty")


def test_it_refuses_a_truncated_gzip(bundle_dir: Path) -> None:
    data = archive_of(bundle_dir)
    refused(data[: len(data) // 2], "truncated")


def test_it_refuses_corrupt_deflate_data(bundle_dir: Path) -> None:
    data = bytearray(archive_of(bundle_dir))
    data[-6] ^= 0xFF  # inside the CRC32/ISIZE trailer
    refused(bytes(data), "corrupt_gzip")


def test_it_refuses_gzip_that_is_not_a_tar() -> None:
    refused(gzip.compress(b"hello world" * 100), "corrupt_tar")


@pytest.mark.parametrize(("name", "code"), [
    ("sub/instances/../../../etc/cron.d/x", "path_traversal"),
    ("/etc/passwd", "absolute_path"),
    ("sub//instances/x", "bad_path"),
    ("sub/./manifest.json", "bad_path"),
])
def test_it_refuses_unsafe_member_names(bundle_dir: Path, name: str, code: str) -> None:
    refused(with_extra(bundle_dir, (member(name), b"x")), code)


def test_it_refuses_a_non_utf8_name(bundle_dir: Path) -> None:
    name = b"sub/instances/\xff\xfe.npy".decode("utf-8", "surrogateescape")
    data = tar_gz([(member("sub", tarfile.DIRTYPE), None), (member(name), b"x")], fmt=tarfile.GNU_FORMAT)
    refused(data, "non_utf8_name")


@pytest.mark.parametrize(("kind", "code"), [
    (tarfile.SYMTYPE, "link_member"),
    (tarfile.LNKTYPE, "link_member"),
    (tarfile.CHRTYPE, "special_member"),
    (tarfile.BLKTYPE, "special_member"),
    (tarfile.FIFOTYPE, "special_member"),
])
def test_it_refuses_links_and_special_files(bundle_dir: Path, kind: bytes, code: str) -> None:
    info = member(f"sub/instances/{B3}/outputs/evil", kind, linkname="/etc/passwd")
    err = refused(with_extra(bundle_dir, (info, None)), code)
    assert err.message.startswith(f"sub/instances/{B3}/outputs/evil: ")


def test_it_refuses_a_duplicate_member(bundle_dir: Path) -> None:
    err = refused(with_extra(bundle_dir, (member(f"sub/instances/{B3}/result.json"), b"{}")), "duplicate_member")
    assert err.message == f"sub/instances/{B3}/result.json: appears twice in the archive"


def test_it_refuses_two_top_level_dirs(bundle_dir: Path) -> None:
    refused(with_extra(bundle_dir, (member("other/manifest.json"), b"{}")), "multiple_top_dirs")


def test_it_refuses_a_bundle_without_a_manifest(bundle_dir: Path) -> None:
    (bundle_dir / "manifest.json").unlink()
    refused(archive_of(bundle_dir), "no_manifest", "the top-level directory has no manifest.json")


def test_it_refuses_data_after_the_tar_end(bundle_dir: Path) -> None:
    raw = gzip.decompress(archive_of(bundle_dir)) + b"hidden payload"
    refused(gzip.compress(raw), "corrupt_tar", "there is data after the end of the tar archive")


# --- the manifest and what it indexes ---------------------------------------------------------

def test_it_refuses_another_schema_version(bundle_dir: Path) -> None:
    data = edit(bundle_dir, lambda m: m.update(submission_schema_version=2))
    refused(data, "bad_schema_version", "submission_schema_version is 2; this Portal reads version 1")


def test_it_refuses_a_manifest_that_is_not_json(bundle_dir: Path) -> None:
    (bundle_dir / "manifest.json").write_text("{not json")
    refused(archive_of(bundle_dir), "bad_manifest")


def test_it_refuses_a_file_whose_sha256_differs(bundle_dir: Path) -> None:
    (bundle_dir / "instances" / B3 / "outputs" / "solve.py").write_bytes(b"print(9)\n")
    refused(archive_of(bundle_dir), "hash_mismatch",
            f"instances/{B3}/outputs/solve.py: sha256 does not match the manifest")


def test_it_refuses_a_file_whose_size_differs(bundle_dir: Path) -> None:
    (bundle_dir / "instances" / B3 / "outputs" / "solve.py").write_bytes(b"print(10)\n")
    refused(archive_of(bundle_dir), "size_mismatch",
            f"instances/{B3}/outputs/solve.py: 10 bytes, the manifest says 9")


def test_it_refuses_an_unindexed_file(bundle_dir: Path) -> None:
    (bundle_dir / "instances" / B3 / "outputs" / "extra.npy").write_bytes(b"sneaky")
    refused(archive_of(bundle_dir), "unindexed_file",
            f"instances/{B3}/outputs/extra.npy: not listed in the manifest's files index")


def test_it_refuses_an_unlisted_file_named_manifest_json(bundle_dir: Path) -> None:
    (bundle_dir / "instances" / B4 / "manifest.json").write_text("{}")
    refused(archive_of(bundle_dir), "unindexed_file",
            f"instances/{B4}/manifest.json: not listed in its instance's output_files")


def test_it_refuses_a_missing_indexed_file(bundle_dir: Path) -> None:
    (bundle_dir / "run_metadata.json").unlink()
    refused(archive_of(bundle_dir), "missing_file", "run_metadata.json: listed in the manifest but not in the archive")


def test_it_refuses_an_output_the_instance_does_not_list(bundle_dir: Path) -> None:
    def drop(manifest: dict[str, Any]) -> None:
        manifest["instances"][0]["output_files"].pop(1)
    refused(edit(bundle_dir, drop), "unindexed_file",
            f"instances/{B3}/outputs/solve.py: not listed in its instance's output_files")


def test_it_refuses_a_file_outside_any_declared_instance(bundle_dir: Path) -> None:
    stray = bundle_dir / "instances" / "stray" / "result.json"
    stray.parent.mkdir()
    stray.write_text("{}")
    refused(edit(bundle_dir, reindex=True), "unexpected_file",
            "instances/stray/result.json: not part of any instance in the manifest")


def test_it_refuses_a_benchmark_repo_other_than_seed42(bundle_dir: Path) -> None:
    refused(edit(bundle_dir, lambda m: m.update(benchmark_repo="seed31415")), "bad_benchmark_repo")


# --- identities and policy --------------------------------------------------------------------

def bundle_of(tmp_path: Path, *results: dict[str, Any]) -> bytes:
    out = tmp_path / "out"
    for spec in results:
        write_result(out, **spec)
    build_bundle(out, tmp_path / "sub")
    return archive_of(tmp_path / "sub")


def test_it_refuses_an_unknown_instance(tmp_path: Path) -> None:
    data = bundle_of(tmp_path, {"instance_id": "math.ghost__seed42", "level": "b1", "outputs": {"a.npy": b"1"}})
    refused(data, "unknown_instance", "math.ghost__seed42__b1: math.ghost__seed42 is not an instance of this dataset")


def test_it_refuses_a_seed31415_instance(tmp_path: Path) -> None:
    data = bundle_of(tmp_path, {"instance_id": "math.other__seed31415", "level": "b1", "outputs": {"a.npy": b"1"}})
    err = refused(data, "wrong_seed", known=lambda iid: True)
    assert "seed31415" in err.message and "asibench score" in err.message


def test_it_refuses_an_instance_without_a_seed(tmp_path: Path) -> None:
    data = bundle_of(tmp_path, {"instance_id": "math.other__grid3", "level": "b1", "outputs": {"a.npy": b"1"}})
    refused(data, "wrong_seed", known=lambda iid: True)


def test_it_refuses_a_task_id_that_does_not_match_the_instance(tmp_path: Path) -> None:
    data = bundle_of(tmp_path, {"instance_id": "math.other__seed42", "level": "b1", "outputs": {"a.npy": b"1"},
                                "task_id": "math.roots_demo"})
    refused(data, "bad_identity", "math.other__seed42__b1: task_id 'math.roots_demo' is not the part of "
            "math.other__seed42 before '__'")


def test_it_refuses_a_bad_prompt_level(tmp_path: Path) -> None:
    data = bundle_of(tmp_path, {"instance_id": IID, "level": "b5", "outputs": {"roots.npy": b"1"}})
    refused(data, "bad_prompt_level", f"{IID}__b5: prompt_level 'b5' is not one of b1, b2, b3, b4")


def test_it_refuses_a_duplicate_base_name(bundle_dir: Path) -> None:
    refused(edit(bundle_dir, lambda m: (m["instances"].append(m["instances"][0]),
                                        m.update(instance_count=4))), "duplicate_instance")


def test_it_refuses_one_result_under_two_base_names() -> None:
    base = "chemistry.counterpoise_cbs_energies__seed42__b1"
    refused(HOSTILE["one_result_under_two_base_names"][0](), "duplicate_result",
            f"{base}__attempt1: the same result as {base} (chemistry.counterpoise_cbs_energies__seed42, b1, "
            "attempt 1); list each result once", known=lambda iid: True)


def test_it_refuses_a_base_name_that_does_not_match_the_attempt(tmp_path: Path) -> None:
    data = bundle_of(tmp_path, {"instance_id": IID, "level": "b2", "outputs": {"roots.npy": b"1"}, "attempt": 3,
                                "base_name": f"{IID}__b2__attempt2"})
    refused(data, "bad_base_name")


@pytest.mark.parametrize(("sandbox", "fragment"), [
    (LINUX_NS_SANDBOX, "sandbox mode 'linux_ns' is not accepted for this dataset (accepted: os)"),
    ({**OS_SANDBOX, "image_identity": " "}, "needs verification_status docker_container and an image_identity"),
    (None, "provenance.sandbox is missing"),
])
def test_it_refuses_sandbox_modes_the_dataset_does_not_accept(tmp_path: Path, sandbox: Any, fragment: str) -> None:
    data = bundle_of(tmp_path, {"instance_id": IID, "level": "b1", "outputs": {"roots.npy": b"1"},
                                "sandbox": sandbox})
    err = refused(data, "sandbox_policy")
    assert fragment in err.message


def test_it_refuses_a_result_json_that_disagrees_with_the_manifest(bundle_dir: Path) -> None:
    path = bundle_dir / "instances" / B3 / "result.json"
    path.write_text(path.read_text().replace('"status": "completed"', '"status": "failed"', 1))
    refused(edit(bundle_dir, reindex=True), "result_mismatch",
            f"instances/{B3}/result.json: status is 'failed' but the manifest says 'completed'")


def test_it_refuses_a_persisted_output_hash_that_disagrees(bundle_dir: Path) -> None:
    path = bundle_dir / "instances" / B3 / "result.json"
    result = json.loads(path.read_text())
    result["agent_output"]["persisted_outputs"]["files"][0]["sha256"] = "0" * 64
    path.write_text(json.dumps(result))
    refused(edit(bundle_dir, reindex=True), "result_mismatch")


# --- hostile tar headers: refused at once, never a hang, a crash or unbounded work -------------

@pytest.mark.timeout(10)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_it_refuses_a_hostile_header_with_its_reason(name: str) -> None:
    build, code = HOSTILE[name]
    refused(build(), code, known=lambda iid: True)


@pytest.mark.timeout(10)
def test_it_never_parses_the_result_json_of_an_undeclared_instance(bundle_dir: Path) -> None:
    stray = bundle_dir / "instances" / "stray" / "result.json"
    stray.parent.mkdir()
    stray.write_bytes(b"[" * 100_000)  # would be bad_result_json if it were parsed
    refused(edit(bundle_dir, reindex=True), "unexpected_file",
            "instances/stray/result.json: not part of any instance in the manifest")


@pytest.mark.timeout(10)
def test_it_refuses_a_declared_result_json_that_nests_too_deeply(bundle_dir: Path) -> None:
    (bundle_dir / "instances" / B3 / "result.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    refused(edit(bundle_dir, reindex=True), "bad_result_json",
            f"instances/{B3}/result.json: JSON nested too deeply")


def test_it_caps_the_result_json_files_together(bundle_dir: Path) -> None:
    err = refused(archive_of(bundle_dir), "file_too_large", limits=BundleLimits(max_results_bytes=3000))
    assert "result.json files exceed" in err.message


def test_it_caps_name_length_and_depth_at_the_limits(bundle_dir: Path) -> None:
    refused(archive_of(bundle_dir), "name_too_long", limits=BundleLimits(max_name_bytes=40))
    refused(archive_of(bundle_dir), "path_too_deep", limits=BundleLimits(max_path_depth=4))
    bundle, _ = verify(archive_of(bundle_dir), limits=BundleLimits(max_path_depth=6))
    assert bundle.instance_count == 3


def test_it_reads_long_names_from_ustar_prefix_pax_and_gnu_headers(tmp_path: Path) -> None:
    long_dir = "sub/instances/" + "x" * 120
    for fmt in (tarfile.USTAR_FORMAT, tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        data = tar_gz([(member("sub", tarfile.DIRTYPE), None), (member(f"{long_dir}/result.json"), b"{}")], fmt=fmt)
        # The name survives whichever long-name mechanism the writer used: the file is seen as undeclared.
        refused(data, "no_manifest")
        data = tar_gz([(member("sub", tarfile.DIRTYPE), None), (member(f"{long_dir}/result.json"), b"{}"),
                       (member("sub/manifest.json"), json.dumps({
                           "submission_schema_version": 1, "instance_count": 0, "instances": [],
                           "files": [{"path": f"{long_dir[4:]}/result.json", "bytes": 2,
                                      "sha256": hashlib.sha256(b"{}").hexdigest()}]}).encode())], fmt=fmt)
        refused(data, "unexpected_file", f"{long_dir[4:]}/result.json: not part of any instance in the manifest")


def test_it_refuses_a_header_with_a_bad_checksum(bundle_dir: Path) -> None:
    raw = bytearray(gzip.decompress(archive_of(bundle_dir)))
    raw[0] ^= 0x01  # the first member's name, so its checksum no longer matches
    refused(gzip.compress(bytes(raw)), "corrupt_tar", "the archive is not a valid tar stream (bad header checksum)")


def test_it_refuses_a_file_ending_inside_its_data(bundle_dir: Path) -> None:
    raw = gzip.decompress(archive_of(bundle_dir))
    refused(gzip.compress(raw[:2000]), "corrupt_tar")


# --- what the database and the scoring extraction would read differently -----------------------

def test_it_names_the_field_that_holds_a_nul_or_a_lone_surrogate() -> None:
    any_instance = {"known": lambda iid: True}
    refused(HOSTILE["nul_in_the_manifest_note"][0](), "bad_manifest",
            "manifest.json: note holds a NUL character (U+0000), which cannot be stored", **any_instance)
    refused(HOSTILE["nul_in_a_provenance_key"][0](), "bad_manifest",
            "manifest.json: instances[0].provenance.agent.'cfg\\x00' holds a NUL character (U+0000), which cannot "
            "be stored", **any_instance)
    refused(HOSTILE["unpaired_surrogate_in_the_manifest"][0](), "bad_manifest",
            "manifest.json: instances[0].agent_name holds an unpaired surrogate escape (\\ud800-\\udfff), which is "
            "not valid text", **any_instance)
    err = refused(HOSTILE["nul_in_a_result_json"][0](), "bad_result_json", **any_instance)
    assert err.message.endswith("/result.json: notes holds a NUL character (U+0000), which cannot be stored")


def test_it_refuses_non_string_manifest_fields_and_out_of_range_attempts() -> None:
    any_instance = {"known": lambda iid: True}
    base = "chemistry.counterpoise_cbs_energies__seed42__b1"
    refused(HOSTILE["effective_mode_a_list"][0](), "bad_manifest",
            f"{base}: provenance.sandbox.effective_mode must be a string", **any_instance)
    refused(HOSTILE["status_an_object"][0](), "bad_manifest", f"{base}: 'status' must be a string", **any_instance)
    refused(HOSTILE["attempt_beyond_the_database"][0](), "bad_identity",
            f"{base}__attempt{10 ** 20}: attempt {10 ** 20} must be an integer from 1 to 1000000", **any_instance)
    refused(HOSTILE["attempt_suffix_of_thousands_of_digits"][0](), "bad_identity",
            f"instances[]: base_name {(base + '__attempt' + '7' * 80)[:80]}… is longer than 255 bytes", **any_instance)
    refused(HOSTILE["attempt_suffix_of_many_leading_zeros"][0](), "bad_base_name",
            f"{base}__attempt{'0' * 150}1: expected {base} (attempt 1) or {base}__attempt1", **any_instance)


def test_it_refuses_a_gnu_header_carrying_a_ustar_prefix() -> None:
    refused(HOSTILE["prefix_under_a_gnu_header"][0](), "ambiguous_name",
            "sub/run_metadata.json: a GNU or old-style tar header carries a ustar name prefix; write the archive "
            "in POSIX (pax) format", known=lambda iid: True)


def test_it_refuses_a_second_gzip_member(bundle_dir: Path) -> None:
    tar = gzip.decompress(archive_of(bundle_dir))
    refused(gzip.compress(tar[:4096]) + gzip.compress(tar[4096:]), "multi_member_gzip",
            "the upload holds more than one gzip stream (e.g. two .gz files joined); compress the tar archive once")


def test_it_still_accepts_gnu_and_ustar_archives_without_the_ambiguity(bundle_dir: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive_of(bundle_dir)), mode="r:gz") as tar:
        members = [(info, tar.extractfile(info).read() if info.isfile() else None)  # type: ignore[union-attr]
                   for info in tar.getmembers()]
    for fmt in (tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT):
        bundle, _ = verify(tar_gz(members, fmt=fmt))
        assert bundle.instance_count == 3
