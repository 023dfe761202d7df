"""Hand-made hostile `.tar.gz` bundles: tar headers crafted to make a naive verifier hang, blow up or
grow without bound; manifests whose values break the code or the database behind the verifier; archives
that Python's tarfile (the extraction for scoring) reads differently from the verifier. Shared by the
verifier's unit tests, the live-HTTP intake tests and `bench/bundle_hostile.py`. Each entry maps a name
to (builder, reason code the Portal must give)."""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from collections.abc import Callable
from typing import Any

BLOCK = 512
TOP = "sub"


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


def header(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, fmt: int = tarfile.USTAR_FORMAT,
           pax: dict[str, str] | None = None) -> bytes:
    """One member header (with its PAX header when `pax` is given), as tarfile would write it."""
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = kind, size, 0o644
    if pax is not None:
        info.pax_headers = pax
        fmt = tarfile.PAX_FORMAT
    return info.tobuf(fmt, "utf-8", "surrogateescape")


def regular(name: str, data: bytes, pax: dict[str, str] | None = None) -> bytes:
    return header(name, size=len(data), pax=pax) + _pad(data)


def directory(name: str) -> bytes:
    return header(name, tarfile.DIRTYPE)


def raw_pax(body: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    """An extended header whose body is exactly `body`, well-formed or not."""
    return header("././@PaxHeader", kind, size=len(body)) + _pad(body)


def pax_record(keyword: str, value: str) -> bytes:
    payload = f" {keyword}={value}\n".encode()
    length = len(payload) + 1
    while len(str(length)) + len(payload) != length:
        length += 1
    return str(length).encode() + payload


def archive(*parts: bytes) -> bytes:
    return gzip.compress(b"".join(parts) + bytes(2 * BLOCK), compresslevel=6)


def negative_pax_size() -> bytes:
    # PAX `size=-1` on a regular file: a reader that loops `while left:` never finishes.
    return archive(directory(TOP), header(f"{TOP}/run_metadata.json", pax={"size": "-1"}),
                   regular(f"{TOP}/manifest.json", b"{}"))


def negative_base256_size() -> bytes:
    # GNU base-256 size field holding -4096: the reader's offset arithmetic goes backwards.
    block = bytearray(header(f"{TOP}/run_metadata.json", fmt=tarfile.GNU_FORMAT))
    block[124:136] = b"\xff" * 10 + b"\xf0\x00"
    block[148:156] = b"        "
    block[148:156] = b"%06o\x00 " % sum(block)
    return archive(directory(TOP), bytes(block), bytes(8 * BLOCK))


def absurd_pax_size() -> bytes:
    return archive(directory(TOP), header(f"{TOP}/run_metadata.json", pax={"size": "9" * 40}))


def pax_digit_run() -> bytes:
    # CVE-2024-6232 shape: a long run of digits makes tarfile's `\d+ hdrcharset=` search quadratic.
    return archive(directory(TOP), raw_pax(b"9" * 400_000), regular(f"{TOP}/run_metadata.json", b"{}"))


def pax_digit_run_under_the_header_cap() -> bytes:
    return archive(directory(TOP), raw_pax(b"9" * 60_000), regular(f"{TOP}/run_metadata.json", b"{}"))


def pax_records_without_equals() -> bytes:
    # Many short records with no '=' until the very end: tarfile's `([^=]+)=` rescans the rest each time.
    body = b"9 xxxxxx\n" * 40_000 + b"12 path=abc\n"
    return archive(directory(TOP), raw_pax(body), regular(f"{TOP}/run_metadata.json", b"{}"))


def gnu_sparse_map() -> bytes:
    # A GNU sparse 1.0 member: tarfile reads its map with a `buf +=` loop over arbitrary data.
    pax = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": f"{TOP}/x",
           "GNU.sparse.realsize": "10"}
    return archive(directory(TOP), header(f"{TOP}/x", size=BLOCK * 200, pax=pax), b"7" * (BLOCK * 200))


def global_pax_header() -> bytes:
    return archive(raw_pax(pax_record("size", "5"), kind=tarfile.XGLTYPE), directory(TOP),
                   regular(f"{TOP}/manifest.json", b"{}"))


def many_components() -> bytes:
    # One name of 30,000 path components (60 KB, through a PAX path record).
    name = f"{TOP}/" + "a/" * 30_000 + "f.json"
    return archive(directory(TOP), regular(name, b"{}", pax={"path": name}))


def long_component() -> bytes:
    name = f"{TOP}/instances/" + "n" * 300
    return archive(directory(TOP), regular(name, b"{}", pax={"path": name}))


def nested_directories(count: int = 3_000) -> bytes:
    # Thousands of directories, each one level deeper than the last.
    parts = [directory(TOP)]
    name = TOP
    for _ in range(count):
        name += "/d"
        parts.append(header(name, tarfile.DIRTYPE, pax={"path": name}))
    return archive(*parts)


def members_at_every_cap(count: int = 20_001) -> bytes:
    # One member over the member cap, each name ~1000 bytes deep in 31 components: the linear worst case.
    stem = f"{TOP}/" + "/".join(["c" * 30] * 29)
    parts = [directory(TOP)]
    for i in range(count):
        name = f"{stem}/{i:05d}.npy"
        noise = hashlib.sha256(name.encode()).digest() * 12  # incompressible, to stay under the ratio cap
        parts.append(regular(name, noise, pax={"path": name}))
    return archive(*parts)


def _manifest(*base_names: str) -> bytes:
    return json.dumps({"submission_schema_version": 1, "instance_count": len(base_names), "files": [],
                       "instances": [{"base_name": base} for base in base_names]}).encode()


DEEP_JSON = b"[" * 200_000 + b"]" * 200_000
HUGE_INT_JSON = b'{"attempt": ' + b"7" * 100_000 + b"}"


def nested_result_json_declared() -> bytes:
    base = "physics.x__seed42__b1"
    return archive(directory(TOP), regular(f"{TOP}/instances/{base}/result.json", DEEP_JSON),
                   regular(f"{TOP}/manifest.json", _manifest(base)))


def huge_int_result_json_declared() -> bytes:
    base = "physics.x__seed42__b1"
    return archive(directory(TOP), regular(f"{TOP}/instances/{base}/result.json", HUGE_INT_JSON),
                   regular(f"{TOP}/manifest.json", _manifest(base)))


def result_json_of_undeclared_instances(count: int = 40) -> bytes:
    # result.json files no manifest entry names: a verifier that parses them all does the attacker's work.
    parts = [directory(TOP)]
    parts += [regular(f"{TOP}/instances/ghost{i}/result.json", DEEP_JSON) for i in range(count)]
    parts.append(regular(f"{TOP}/manifest.json", _manifest()))
    return archive(*parts)


def nested_manifest() -> bytes:
    return archive(directory(TOP), regular(f"{TOP}/manifest.json", DEEP_JSON))


def file_under_a_file() -> bytes:
    # `sub/a/b` after `sub/a` was a regular file, and `sub/c` as a file after `sub/c/d`.
    return archive(directory(TOP), regular(f"{TOP}/c/d", b"1"), regular(f"{TOP}/c", b"2"))


# --- well-formed archives with a hostile manifest or result.json --------------------------------
# One complete instance of the live tests' catalog (tests/support.py SUBMIT_TASKS), so the over-HTTP run
# reaches the same rule as the unit run, whose catalog takes any instance.

IID = "chemistry.counterpoise_cbs_energies__seed42"
OS_SANDBOX = {"requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
              "verification_status": "docker_container", "image_identity": "sha256:" + "4e7d" * 16}
Edit = Callable[[dict[str, Any]], None]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def one_instance_members(*, attempt: int = 1, outputs: dict[str, bytes] | None = None,
                         entry: Edit | None = None, result: Edit | None = None) -> list[tuple[str, bytes]]:
    """(bundle-root relative path, bytes) of a valid one-result bundle, manifest last; `entry` edits the
    manifest's instances[0], `result` the result.json (both before the files index is written)."""
    base = f"{IID}__b1" + (f"__attempt{attempt}" if attempt != 1 else "")
    outputs = {"energies.json": b'{"e": [1.0, 2.0]}'} if outputs is None else outputs
    folder = f"instances/{base}"
    data = {
        "instance_id": IID, "task_id": IID.split("__")[0], "prompt_level": "b1", "attempt": attempt,
        "status": "completed", "agent_output": {"persisted_outputs": {"files": [
            {"path": name, "sha256": _sha(body), "bytes": len(body)} for name, body in outputs.items()]}},
    }
    item: dict[str, Any] = {
        "base_name": base, "instance_id": IID, "task_id": data["task_id"], "prompt_level": "b1",
        "attempt": attempt, "agent_name": "codex_cli", "status": "completed",
        "result_file": f"{folder}/result.json", "framework_task_info_file": None,
        "output_files": [{"path": f"outputs/{name}", "sha256": _sha(body), "bytes": len(body)}
                         for name, body in outputs.items()],
        "provenance": {"agent": {"agent_name": "codex_cli"}, "sandbox": dict(OS_SANDBOX)},
    }
    if result is not None:
        result(data)
    if entry is not None:
        entry(item)
    files = [(f"{folder}/result.json", json.dumps(data).encode())]
    files += [(f"{folder}/outputs/{name}", body) for name, body in outputs.items()]
    manifest = {
        "submission_schema_version": 1, "created_at": "2026-01-01T00:00:00Z", "framework_version": "0.2.0",
        "note": "hostile", "benchmark_repo": "seed42", "instance_count": 1, "run_metadata_included": False,
        "instances": [item], "files": [{"path": path, "sha256": _sha(body), "bytes": len(body)}
                                       for path, body in files],
    }
    return [*files, ("manifest.json", json.dumps(manifest).encode())]


def tar_of(members: list[tuple[str, bytes]]) -> bytes:
    """The uncompressed ustar stream of `members` under TOP/, with their folders."""
    parts, folders = [directory(TOP)], {TOP}
    for path, body in members:
        name = f"{TOP}/{path}"
        for cut in range(len(TOP), len(name)):
            if name[cut] == "/" and name[:cut] not in folders:
                folders.add(name[:cut])
                parts.append(directory(name[:cut]))
        parts.append(regular(name, body, pax={"path": name} if len(name) > 100 else None))
    return b"".join(parts) + bytes(2 * BLOCK)


def manifest_bundle(**edits: Any) -> bytes:
    return gzip.compress(tar_of(one_instance_members(**edits)))


def _effective_mode(value: Any) -> Edit:
    return lambda item: item["provenance"]["sandbox"].update(effective_mode=value)


def status_an_object() -> bytes:
    # The same object in result.json, so the two agree and only the type is wrong.
    return manifest_bundle(entry=lambda item: item.update(status={"a": 1}),
                           result=lambda data: data.update(status={"a": 1}))


def attempt_suffix_of_thousands_of_digits() -> bytes:
    # int() of 5,000 digits is a ValueError (CPython's int/str conversion limit), not a mismatch.
    return manifest_bundle(entry=lambda item: item.update(base_name=f"{IID}__b1__attempt" + "7" * 5_000))


def attempt_suffix_of_many_leading_zeros() -> bytes:
    # Within a folder name's 255 bytes: attempt 1 under a second spelling.
    return manifest_bundle(entry=lambda item: item.update(base_name=f"{IID}__b1__attempt" + "0" * 150 + "1"))


def attempt_beyond_the_database() -> bytes:
    # A JSON int the verifier takes, then PostgreSQL's integer column refuses when it is stored.
    return manifest_bundle(attempt=10 ** 20)


def nul_in_the_manifest_note() -> bytes:
    # "\u0000" is valid JSON, but PostgreSQL text and jsonb cannot hold U+0000.
    return gzip.compress(tar_of([(path, body.replace(b'"hostile"', b'"team\\u0000x"'))
                                 for path, body in one_instance_members()]))


def nul_in_a_provenance_key() -> bytes:
    return manifest_bundle(entry=lambda item: item["provenance"]["agent"].update({"cfg\x00": "x"}))


def unpaired_surrogate_in_the_manifest() -> bytes:
    # Decodes to a str that UTF-8 (and so the database driver) cannot encode.
    return manifest_bundle(entry=lambda item: item.update(agent_name="agent-\ud800"))


def nul_in_a_result_json() -> bytes:
    # In the result's identity; in the agent's log it is cleaned away instead (test_agent_logs_verify.py).
    return manifest_bundle(result=lambda data: data.update(status="completed\x00"))


def prefix_under_a_gnu_header() -> bytes:
    """A GNU-magic header with its ustar `prefix` bytes set. The verifier read the name field alone
    (`sub/run_metadata.json`, indexed with the crafted bytes); Python's tarfile, which extracts for scoring,
    prepends the prefix and so wrote the crafted bytes over an instance output verified with other bytes."""
    honest, crafted = b'{"e": [1.0, 2.0]}', b'{"e": [0.0]}'
    *files, (_, raw_manifest) = one_instance_members(
        outputs={"energies.json": honest, f"{TOP}/run_metadata.json": honest})
    manifest = json.loads(raw_manifest)
    manifest["run_metadata_included"] = True
    manifest["files"].append({"path": "run_metadata.json", "sha256": _sha(crafted), "bytes": len(crafted)})
    block = bytearray(header(f"{TOP}/run_metadata.json", size=len(crafted), fmt=tarfile.GNU_FORMAT))
    prefix = f"{TOP}/instances/{IID}__b1/outputs".encode()
    block[345:345 + len(prefix)] = prefix
    block[148:156] = b"        "
    block[148:156] = b"%06o\x00 " % sum(block)
    body = tar_of(files)[:-2 * BLOCK] + bytes(block) + _pad(crafted)
    return gzip.compress(body + regular(f"{TOP}/manifest.json", json.dumps(manifest).encode()) + bytes(2 * BLOCK))


def second_gzip_member() -> bytes:
    # tarfile's stream reader (the extraction for scoring) stops at the end of the first gzip member.
    tar = tar_of(one_instance_members())
    cut = len(tar) // BLOCK // 2 * BLOCK
    return gzip.compress(tar[:cut]) + gzip.compress(tar[cut:])


def one_result_under_two_base_names() -> bytes:
    """Attempt 1 of one instance at b1 under both of its spellings, `x__b1` and `x__b1__attempt1`: two
    base names, so the database's unique base name per run kept both and the one result counted twice."""
    *files, (_, raw_manifest) = one_instance_members()
    manifest = json.loads(raw_manifest)
    first, second = f"instances/{IID}__b1/", f"instances/{IID}__b1__attempt1/"
    copies = [(path.replace(first, second), body) for path, body in files]
    item = json.loads(json.dumps(manifest["instances"][0]).replace(first, second))
    item["base_name"] = f"{IID}__b1__attempt1"
    manifest["instances"].append(item)
    manifest["instance_count"] = 2
    manifest["files"] += [{"path": path, "sha256": _sha(body), "bytes": len(body)} for path, body in copies]
    return gzip.compress(tar_of([*files, *copies, ("manifest.json", json.dumps(manifest).encode())]))


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "negative_pax_size": (negative_pax_size, "corrupt_tar"),
    "negative_base256_size": (negative_base256_size, "corrupt_tar"),
    "absurd_pax_size": (absurd_pax_size, "file_too_large"),
    "pax_digit_run": (pax_digit_run, "corrupt_tar"),
    "pax_digit_run_under_the_header_cap": (pax_digit_run_under_the_header_cap, "corrupt_tar"),
    "pax_records_without_equals": (pax_records_without_equals, "corrupt_tar"),
    "gnu_sparse_map": (gnu_sparse_map, "special_member"),
    "global_pax_header": (global_pax_header, "corrupt_tar"),
    "many_components": (many_components, "name_too_long"),
    "long_component": (long_component, "name_too_long"),
    "nested_directories": (nested_directories, "path_too_deep"),
    "members_at_every_cap": (members_at_every_cap, "too_many_members"),
    "nested_result_json_declared": (nested_result_json_declared, "bad_result_json"),
    "huge_int_result_json_declared": (huge_int_result_json_declared, "bad_result_json"),
    "result_json_of_undeclared_instances": (result_json_of_undeclared_instances, "unindexed_file"),
    "nested_manifest": (nested_manifest, "bad_manifest"),
    "file_under_a_file": (file_under_a_file, "bad_path"),
    "effective_mode_a_list": (lambda: manifest_bundle(entry=_effective_mode(["os"])), "bad_manifest"),
    "effective_mode_an_object": (lambda: manifest_bundle(entry=_effective_mode({"os": 1})), "bad_manifest"),
    "status_an_object": (status_an_object, "bad_manifest"),
    "attempt_suffix_of_thousands_of_digits": (attempt_suffix_of_thousands_of_digits, "bad_identity"),
    "attempt_suffix_of_many_leading_zeros": (attempt_suffix_of_many_leading_zeros, "bad_base_name"),
    "attempt_beyond_the_database": (attempt_beyond_the_database, "bad_identity"),
    "nul_in_the_manifest_note": (nul_in_the_manifest_note, "bad_manifest"),
    "nul_in_a_provenance_key": (nul_in_a_provenance_key, "bad_manifest"),
    "unpaired_surrogate_in_the_manifest": (unpaired_surrogate_in_the_manifest, "bad_manifest"),
    "nul_in_a_result_json": (nul_in_a_result_json, "bad_result_json"),
    "prefix_under_a_gnu_header": (prefix_under_a_gnu_header, "ambiguous_name"),
    "second_gzip_member": (second_gzip_member, "multi_member_gzip"),
    "one_result_under_two_base_names": (one_result_under_two_base_names, "duplicate_result"),
}


def sizes() -> dict[str, int]:
    return {name: len(build()) for name, (build, _) in HOSTILE.items()}


if __name__ == "__main__":  # pragma: no cover - a quick look at what the builders make
    for name, size in sizes().items():
        print(f"{name:40s} {size:>10d} bytes")
