"""Hand-made hostile `.tar.gz` bundles: tar headers crafted to make a naive verifier hang, blow up or
grow without bound. Shared by the verifier's unit tests, the live-HTTP intake tests and
`bench/bundle_hostile.py`. Each entry maps a name to (builder, reason code the Portal must give)."""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from collections.abc import Callable

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
}


def sizes() -> dict[str, int]:
    return {name: len(build()) for name, (build, _) in HOSTILE.items()}


if __name__ == "__main__":  # pragma: no cover - a quick look at what the builders make
    for name, size in sizes().items():
        print(f"{name:40s} {size:>10d} bytes")
