"""The verifier's inflater: ISA-L (pinned) and the zlib fallback give the same verdict on every bundle."""

import gzip
import hashlib
import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from contracts import inflate
from contracts.bundle import build_bundle, write_archive
from portal.submissions.bundle_verify import BundleLimits, BundleRejected, verify_bundle_stream
from tests.results_tree import make_results, write_result

IID = "math.roots_demo__seed42"
KNOWN = {IID, "math.other__seed42"}
DECLARED = {"math.roots_demo": ["roots.npy", "solve.py"], "math.other": ["a.npy"]}
BACKENDS = ("isal", "zlib")


def verdict(data: bytes, backend: str, monkeypatch: pytest.MonkeyPatch, limits: BundleLimits | None = None) -> Any:
    """("ok", archive sha256, inflated bytes, instances) or ("refused", reason code)."""
    monkeypatch.setenv("ASIBENCH_INFLATE", backend)
    assert inflate.inflate_backend() == backend
    try:
        bundle = verify_bundle_stream(io.BytesIO(data), io.BytesIO(), limits or BundleLimits(), KNOWN, {"os"},
                                      lambda task_id: DECLARED[task_id])
    except BundleRejected as exc:
        return ("refused", exc.code)
    return ("ok", bundle.archive_sha256, bundle.uncompressed_bytes, sorted(e.base_name for e in bundle.entries))


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    tmp = tmp_path_factory.mktemp("inflate")
    build_bundle(make_results(tmp / "out"), tmp / "sub", note="team-x", benchmark_repo="seed42")
    return write_archive(tmp / "sub", tmp / "sub.tar.gz").read_bytes()


def _members(good: bytes) -> bytes:
    """The same tar as two concatenated gzip members (what `cat a.gz b.gz` produces): refused, because
    tarfile's stream reader, which extracts for scoring, would see only the first."""
    tar = gzip.decompress(good)
    half = len(tar) // 2
    return gzip.compress(tar[:half]) + gzip.compress(tar[half:])


def _bad_crc(good: bytes) -> bytes:
    return good[:-8] + struct.pack("<I", (zlib.crc32(gzip.decompress(good)) ^ 1) & 0xFFFFFFFF) + good[-4:]


def _bad_length(good: bytes) -> bytes:
    return good[:-4] + struct.pack("<I", (len(gzip.decompress(good)) + 1) & 0xFFFFFFFF)


def _flipped(good: bytes) -> bytes:
    body = bytearray(good)
    body[len(body) // 2] ^= 0xFF
    return bytes(body)


CASES = {
    "valid": (lambda g: g, "ok"),
    "two gzip members": (_members, "multi_member_gzip"),
    "a second member after zero padding": (lambda g: g + bytes(100) + gzip.compress(b"x"), "multi_member_gzip"),
    "one stray byte after the stream": (lambda g: g + b"\x1f", "corrupt_gzip"),
    "zero padding after the stream": (lambda g: g + b"\0" * 1000, "ok"),
    "empty body": (lambda g: b"", "not_gzip"),
    "not gzip": (lambda g: b"PK\x03\x04" + g, "not_gzip"),
    "truncated": (lambda g: g[: len(g) * 2 // 3], "truncated"),
    "cut inside the trailer": (lambda g: g[:-3], "truncated"),
    "corrupt deflate data": (_flipped, None),  # whichever rule notices first, the same for both
    "bad CRC trailer": (_bad_crc, "corrupt_gzip"),
    "bad length trailer": (_bad_length, "corrupt_gzip"),
    "garbage after the stream": (lambda g: g + b"junk after the end", "corrupt_gzip"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_both_inflaters_give_the_same_verdict(case: str, good: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    make, expected = CASES[case]
    data = make(good)
    verdicts = {backend: verdict(data, backend, monkeypatch) for backend in BACKENDS}
    assert verdicts["isal"] == verdicts["zlib"], verdicts
    if expected == "ok":
        assert verdicts["isal"][0] == "ok" and verdicts["isal"][1] == hashlib.sha256(data).hexdigest()
        assert verdicts["isal"][2] == len(gzip.decompress(data))
    elif expected is not None:
        assert verdicts["isal"] == ("refused", expected)
    else:
        assert verdicts["isal"][0] == "refused"


def test_both_inflaters_stop_a_gzip_bomb_at_the_ratio_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    limits = BundleLimits(max_ratio=20, ratio_grace_bytes=1 << 20)
    for backend in BACKENDS:
        assert verdict(bomb, backend, monkeypatch, limits) == ("refused", "ratio_exceeded"), backend


def test_both_inflaters_stop_at_the_uncompressed_cap(good: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    limits = BundleLimits(max_uncompressed_bytes=len(gzip.decompress(good)) // 2)
    for backend in BACKENDS:
        assert verdict(good, backend, monkeypatch, limits) == ("refused", "uncompressed_too_large"), backend


def test_isal_is_the_default_inflater_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASIBENCH_INFLATE", raising=False)
    assert inflate.isal_zlib is not None, "isal is pinned in requirements/base.txt"
    assert inflate.inflate_backend() == "isal"
    monkeypatch.setenv("ASIBENCH_INFLATE", "zlib")
    assert inflate.inflate_backend() == "zlib"


def test_the_zlib_fallback_is_used_without_isal(monkeypatch: pytest.MonkeyPatch, good: bytes) -> None:
    monkeypatch.delenv("ASIBENCH_INFLATE", raising=False)
    monkeypatch.setattr(inflate, "isal_zlib", None)
    assert inflate.inflate_backend() == "zlib"
    assert isinstance(inflate.gzip_inflater()._obj, type(zlib.decompressobj()))
    assert verdict(good, "zlib", monkeypatch)[0] == "ok"


def test_both_raise_inflate_error_on_bad_data() -> None:
    for backend in BACKENDS:
        inflater = inflate.gzip_inflater(backend)
        with pytest.raises(inflate.InflateError):
            inflater.decompress(b"\x1f\x8b\x08\x00" + b"\xff" * 64)


def test_a_large_bundle_inflates_identically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several MB across many read chunks and inflate slices: same digests from both."""
    import json

    import numpy as np

    results = tmp_path / "out"
    results.mkdir()
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    rng = np.random.default_rng(7)
    for level in ("b1", "b2"):
        values = np.round(rng.standard_normal(400_000) * 1024) / 1024  # ~3 MB that gzip cannot shrink much
        write_result(results, IID, level, {"roots.npy": values.tobytes(), "solve.py": b"print(1)\n"})
    build_bundle(results, tmp_path / "sub", benchmark_repo="seed42")
    data = write_archive(tmp_path / "sub", tmp_path / "sub.tar.gz").read_bytes()
    assert len(data) > 1 << 20  # many 1 MB read chunks and 256 KB inflate slices
    verdicts = {backend: verdict(data, backend, monkeypatch) for backend in BACKENDS}
    assert verdicts["isal"] == verdicts["zlib"] and verdicts["isal"][0] == "ok", verdicts
