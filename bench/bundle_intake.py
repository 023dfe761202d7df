"""Bundle intake benchmark: the streaming verifier against the machine's one-pass limit and `tar -xzf`.

    .venv/bin/python bench/bundle_intake.py --size-mb 64 --size-mb 512
    .venv/bin/python bench/bundle_intake.py --size-mb 64 --endpoint http://127.0.0.1:8000 --token asi_pat_… \
        --instance-id math.roots_demo__seed42

For each size it builds a synthetic results dir of float64 .npy outputs (random normals quantised to
2^-20, so gzip keeps roughly 3/4 of the bytes), bundles it with our bundler, and measures, each in a
fresh child process whose peak RSS is read with wait4():
  (a) verify_bundle_stream from the archive file to a temp file on the same disk
  (b) the one-pass limit: read + inflate + sha256 of the inflated stream, nothing else
  (c) the usual alternative: `tar -xzf` into a directory, then sha256 of every extracted file
  (d) with --endpoint/--token: a streamed POST to {endpoint}/api/v1/submissions/bundle, end to end
Throughput is in MB (10^6 bytes) of *uncompressed* tar per second; the archive MB/s is shown as well.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cli_client.formats.bundle import build_bundle, write_archive  # noqa: E402
from portal.submissions.bundle_verify import BundleLimits, verify_bundle_stream  # noqa: E402

MB = 1_000_000
CHUNK = 1 << 20
FILE_MB = 8
DEFAULT_ID = "bench.synthetic__seed42"
OS_SANDBOX = {"requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
              "verification_status": "docker_container", "image_identity": "sha256:" + "0" * 64}
BENCH_LIMITS = BundleLimits(max_compressed_bytes=4 << 30, max_uncompressed_bytes=8 << 30)


# --- the synthetic bundle ---------------------------------------------------------------------

def make_results(root: Path, size_mb: int, instance_ids: list[str]) -> None:
    import numpy as np

    rng = np.random.default_rng(42)
    count = max(1, size_mb // FILE_MB)
    slots = [(iid, level, attempt) for attempt in range(1, 1000) for iid in instance_ids
             for level in ("b1", "b2", "b3", "b4")][:count]
    (root / "run_metadata.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    for iid, level, attempt in slots:
        task_id = iid.split("__")[0]
        base = f"{iid}__{level}" + (f"__attempt{attempt}" if attempt > 1 else "")
        out_dir = root / task_id / f"{base}.outputs"
        out_dir.mkdir(parents=True, exist_ok=True)
        values = np.round(rng.standard_normal(FILE_MB * MB // 8) * (1 << 20)) / (1 << 20)
        np.save(out_dir / "out.npy", values)
        data = (out_dir / "out.npy").read_bytes()
        record = {"path": "out.npy", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        result = {"result_schema_version": 1, "instance_id": iid, "task_id": task_id, "attempt": attempt,
                  "prompt_level": level, "agent_name": "BenchAdapter", "status": "completed",
                  "provenance": {"agent": {"agent_name": "bench"}, "sandbox": OS_SANDBOX},
                  "agent_output": {"persisted_outputs": {"dir": f"{base}.outputs", "files": [record]}}}
        (root / task_id / f"{base}.json").write_text(json.dumps(result))


def make_archive(workdir: Path, size_mb: int, instance_ids: list[str]) -> Path:
    results = workdir / f"results_{size_mb}"
    make_results(results, size_mb, instance_ids)
    build_bundle(results, workdir / f"bundle_{size_mb}")
    # Level 6 only to save build time; inflate speed hardly depends on the level.
    archive = write_archive(workdir / f"bundle_{size_mb}", workdir / f"bundle_{size_mb}.tar.gz", compresslevel=6)
    shutil.rmtree(results)
    shutil.rmtree(workdir / f"bundle_{size_mb}")
    return archive


# --- the measured operations, each run in a child ---------------------------------------------

def child_verify(archive: Path, tracemalloc_on: bool) -> dict[str, Any]:
    if tracemalloc_on:
        import tracemalloc

        tracemalloc.start()
    start = time.perf_counter()
    with archive.open("rb") as source, tempfile.NamedTemporaryFile(dir=archive.parent) as sink:
        bundle = verify_bundle_stream(source, sink, BENCH_LIMITS, lambda iid: True, {"os"}, lambda t: ["out.npy"])
        sink.flush()
    seconds = time.perf_counter() - start
    report: dict[str, Any] = {"seconds": seconds, "uncompressed": bundle.uncompressed_bytes,
                              "instances": bundle.instance_count}
    if tracemalloc_on:
        report["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1]
    return report


def child_onepass(archive: Path) -> dict[str, Any]:
    start = time.perf_counter()
    inflate = zlib.decompressobj(wbits=31)
    digest = hashlib.sha256()
    total = 0
    with archive.open("rb") as source:
        while chunk := source.read(CHUNK):
            out = inflate.decompress(chunk)
            total += len(out)
            digest.update(out)
    return {"seconds": time.perf_counter() - start, "uncompressed": total}


def child_tar(archive: Path) -> dict[str, Any]:
    target = Path(tempfile.mkdtemp(dir=archive.parent))
    try:
        start = time.perf_counter()
        subprocess.run(["tar", "-xzf", str(archive), "-C", str(target)], check=True)
        for path in sorted(target.rglob("*")):
            if path.is_file():
                digest = hashlib.sha256()
                with path.open("rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
        return {"seconds": time.perf_counter() - start}
    finally:
        shutil.rmtree(target)


def peak_rss_mb() -> float:
    # VmHWM belongs to this process image; ru_maxrss would also count the parent's pages at fork time.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its waited-for children (`tar`)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_child(kind: str, archive: Path, *extra: str) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return its JSON report."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, str(archive), *extra],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    if proc.wait() != 0:
        raise SystemExit(f"child {kind} failed ({proc.returncode})")
    return json.loads(out)


def upload(archive: Path, endpoint: str, token: str) -> None:
    import requests

    url = endpoint.rstrip("/") + "/api/v1/submissions/bundle"
    size = archive.stat().st_size
    start = time.perf_counter()
    with archive.open("rb") as body:
        response = requests.post(url, data=body, timeout=300, allow_redirects=False, headers={
            "Content-Type": "application/gzip", "Content-Length": str(size), "X-ASIBench-Filename": archive.name,
            "Authorization": f"Bearer {token}"})
    seconds = time.perf_counter() - start
    print(f"  (d) upload  HTTP {response.status_code} in {seconds:.2f} s = {size / MB / seconds:.1f} MB/s "
          f"(archive bytes)  reply: {response.text[:300]}")


def bench(size_mb: int, workdir: Path, args: argparse.Namespace) -> None:
    archive = make_archive(workdir, size_mb, args.instance_id or [DEFAULT_ID])
    compressed = archive.stat().st_size
    try:
        runs: dict[str, list[dict[str, Any]]] = {"verify": [], "onepass": [], "tar": []}
        for _ in range(args.repeat):  # interleaved, so load from other processes hits all three alike
            for kind, reports in runs.items():
                reports.append(run_child(kind, archive))
        verify, onepass, untar = (min(runs[k], key=lambda r: r["seconds"]) for k in ("verify", "onepass", "tar"))
        cpu = {kind: min(r["cpu"] for r in reports) for kind, reports in runs.items()}
        traced = run_child("verify", archive, "--tracemalloc") if args.tracemalloc else None
        unc = onepass["uncompressed"]

        def rate(report: dict[str, Any]) -> str:
            return f"{unc / MB / report['seconds']:6.1f} MB/s ({compressed / MB / report['seconds']:5.1f} archive MB/s)"

        print(f"\n== {size_mb} MB of outputs: {verify['instances']} instances, tar {unc / MB:.1f} MB, "
              f"archive {compressed / MB:.1f} MB (ratio {unc / compressed:.2f}); best of {args.repeat}, "
              f"load average {os.getloadavg()[0]:.1f}")
        print(f"  (a) verifier  {verify['seconds']:6.2f} s  {rate(verify)}  cpu {cpu['verify']:5.2f} s  "
              f"peak RSS {max(r['peak_rss_mb'] for r in runs['verify']):.1f} MB"
              + (f", tracemalloc peak {traced['tracemalloc_peak'] / MB:.1f} MB" if traced else ""))
        print(f"  (b) one-pass  {onepass['seconds']:6.2f} s  {rate(onepass)}  cpu {cpu['onepass']:5.2f} s  "
              f"peak RSS {max(r['peak_rss_mb'] for r in runs['onepass']):.1f} MB")
        print(f"  (c) tar+sha   {untar['seconds']:6.2f} s  {rate(untar)}  cpu {cpu['tar']:5.2f} s")
        print(f"  verifier vs one-pass: {onepass['seconds'] / verify['seconds']:.2f} (wall), "
              f"{cpu['onepass'] / cpu['verify']:.2f} (cpu);  verifier vs tar+sha: "
              f"{untar['seconds'] / verify['seconds']:.2f} (wall), {cpu['tar'] / cpu['verify']:.2f} (cpu)")
        if args.endpoint:
            upload(archive, args.endpoint, args.token)
    finally:
        archive.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, action="append", help="outputs per bundle, MB (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is reported")
    parser.add_argument("--tracemalloc", action="store_true", help="also run the verifier under tracemalloc")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--endpoint")
    parser.add_argument("--token")
    parser.add_argument("--instance-id", action="append", help="seed42 instance ids to use (for --endpoint)")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "ARCHIVE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, archive = args.child[0], Path(args.child[1])
        cpu_start = cpu_seconds()
        report = {"verify": lambda: child_verify(archive, args.tracemalloc), "onepass": lambda: child_onepass(archive),
                  "tar": lambda: child_tar(archive)}[kind]()
        report["cpu"] = cpu_seconds() - cpu_start
        report["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(report))
        return
    if args.endpoint and not args.token:
        parser.error("--endpoint needs --token")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, zlib {zlib.ZLIB_RUNTIME_VERSION}")
    workdir = Path(tempfile.mkdtemp(prefix="bundle-intake-", dir=args.workdir))
    try:
        for size in args.size_mb or [64, 512]:
            bench(size, workdir, args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
