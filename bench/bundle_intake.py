"""Bundle intake benchmark: the streaming verifier against the machine's one-pass limits and `tar -xzf`.

    .venv/bin/python bench/bundle_intake.py --size-mb 64 --size-mb 512

For each size it builds a synthetic results dir of float64 .npy outputs (random normals quantised to
2^-20, so gzip keeps roughly 3/4 of the bytes), bundles it with our bundler, and measures, each in a
fresh child process whose peak RSS is read from /proc:
  (a) verify_bundle_stream from the archive file to a temp file on the same disk (its inflater:
      ISA-L when `isal` is installed, see contracts/inflate.py)
  (b) the zlib one-pass limit: read + zlib inflate + sha256 of the inflated stream, nothing else
  (b') the same with ISA-L's inflate
  (c) the usual alternative: `tar -xzf` into a directory, then sha256 of every extracted file
  (d) end to end: a streamed POST to /api/v1/submissions/bundle of a throwaway Portal (gunicorn as
      `make run` starts it, with DEBUG off, on SQLite and local files) that this script starts itself;
      or --endpoint/--token/--instance-id for a Portal you run (its seed42 must contain the instance
      ids, with `out.npy` a declared output). The body goes out with sendfile, so the client takes next
      to no CPU from the two cores (as from another machine); --client requests sends it as `asibench
      submit` does. Measurements run round by round, so (d) is also compared with its own round's (a).
Throughput is in MB (10^6 bytes) of *uncompressed* tar per second; the archive MB/s is shown as well.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from contracts.bundle import build_bundle, write_archive  # noqa: E402
from contracts.inflate import gzip_inflater, inflate_backend  # noqa: E402
from portal.submissions.bundle_verify import BundleLimits, verify_bundle_stream  # noqa: E402

MB = 1_000_000
CHUNK = 1 << 20
FILE_MB = 8
DEFAULT_ID = "bench.synthetic__seed42"
OS_SANDBOX = {"requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
              "verification_status": "docker_container", "image_identity": "sha256:" + "0" * 64}
BENCH_LIMITS = BundleLimits(max_compressed_bytes=4 << 30, max_uncompressed_bytes=8 << 30)


# --- the synthetic bundle ---------------------------------------------------------------------

def make_results(root: Path, size_mb: int, instance_ids: list[str], seed: int = 0) -> None:
    import numpy as np

    rng = np.random.default_rng(42 + seed)
    count = max(1, size_mb // FILE_MB)
    file_mb = min(FILE_MB, size_mb)
    slots = [(iid, level, attempt) for attempt in range(1, 1000) for iid in instance_ids
             for level in ("b1", "b2", "b3", "b4")][:count]
    (root / "run_metadata.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    for iid, level, attempt in slots:
        task_id = iid.split("__")[0]
        base = f"{iid}__{level}" + (f"__attempt{attempt}" if attempt > 1 else "")
        out_dir = root / task_id / f"{base}.outputs"
        out_dir.mkdir(parents=True, exist_ok=True)
        values = np.round(rng.standard_normal(file_mb * MB // 8) * (1 << 20)) / (1 << 20)
        np.save(out_dir / "out.npy", values)
        data = (out_dir / "out.npy").read_bytes()
        record = {"path": "out.npy", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        result = {"result_schema_version": 1, "instance_id": iid, "task_id": task_id, "attempt": attempt,
                  "prompt_level": level, "agent_name": "BenchAdapter", "status": "completed",
                  "provenance": {"agent": {"agent_name": "bench"}, "sandbox": OS_SANDBOX},
                  "agent_output": {"persisted_outputs": {"dir": f"{base}.outputs", "files": [record]}}}
        (root / task_id / f"{base}.json").write_text(json.dumps(result))


def make_archive(workdir: Path, size_mb: int, instance_ids: list[str], seed: int = 0) -> Path:
    results = workdir / f"results_{size_mb}"
    make_results(results, size_mb, instance_ids, seed)
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


def child_onepass(archive: Path, backend: str) -> dict[str, Any]:
    start = time.perf_counter()
    inflate = gzip_inflater(backend)
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


PORTAL_SETUP = """
from portal.accounts.models import User
from portal.accounts.services import cli_token_create
from scoring.models import Dataset, Instance, Task
dataset, _ = Dataset.objects.get_or_create(name="seed42", defaults={"seed": 42, "official": True,
                                           "accepted_sandbox_modes": ["os"]})
task = Task.objects.create(id="bench.synthetic", domain="bench", name="synthetic", version="1", status="final",
                           declared_outputs=[{"name": "out.npy", "type": "npy"}], source_hash="0" * 64,
                           source_dir="/nonexistent")
Instance.objects.create(instance_id="bench.synthetic__seed42", dataset=dataset, task=task, task_revision=1,
                        task_source_hash="0" * 64, input_archive="-", input_sha256="0" * 64, input_bytes=0,
                        reference_archive="-", reference_sha256="0" * 64, generator_hash="0" * 64)
user = User.objects.create_user(email="bench@example.org")
from allauth.account.models import EmailAddress
EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
print("TOKEN=" + cli_token_create(user=user, name="bench").plaintext)
"""


class ThrowawayPortal:
    """A Portal on embedded defaults (SQLite, local files) under a temp dir, served by gunicorn
    exactly as `make run` serves it, with one synthetic seed42 instance and a submitter token."""

    def __init__(self, workdir: Path):
        self.var = workdir / "portal-var"
        self.proc: subprocess.Popen[bytes] | None = None
        self.endpoint = self.token = ""

    def __enter__(self) -> ThrowawayPortal:
        import socket
        import urllib.request

        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "ASIBENCH_"))}
        env.update(ASIBENCH_VAR_DIR=str(self.var), ASIBENCH_BUNDLE_MAX_BYTES=str(BENCH_LIMITS.max_compressed_bytes),
                   ASIBENCH_BUNDLE_MAX_UNCOMPRESSED_BYTES=str(BENCH_LIMITS.max_uncompressed_bytes),
                   ASIBENCH_UPLOAD_RATE="1000/hour",  # the default 30/hour would stop a long --repeat
                   # ... and so would the per-user draft caps: every measured upload stays a draft.
                   ASIBENCH_DRAFTS_PER_USER="100000", ASIBENCH_DRAFT_BYTES_PER_USER=str(1 << 50),
                   # Production settings (no query log), but plain HTTP on loopback: TLS is the proxy's job.
                   DEBUG="0", SECRET_KEY="bench-" + "k" * 60, ALLOWED_HOSTS="127.0.0.1,localhost",
                   SECURE_SSL_REDIRECT="0", LOG_LEVEL="WARNING")
        python = str(Path(sys.executable))
        subprocess.run([python, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, check=True,
                       capture_output=True)
        setup = subprocess.run([python, "manage.py", "shell", "-c", PORTAL_SETUP], cwd=REPO, env=env, check=True,
                               capture_output=True, text=True)
        self.token = next(line[6:] for line in setup.stdout.splitlines() if line.startswith("TOKEN="))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}"
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.proc = subprocess.Popen([str(gunicorn), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
                                      "--workers", "2", "--threads", "4", "--timeout", "600"],
                                     cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/healthz", timeout=2).read()
                return self
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.__exit__(None, None, None)
                    raise SystemExit("the throwaway Portal did not start") from None
                time.sleep(0.3)

    def warm_up(self, workdir: Path) -> None:
        """Each gunicorn worker imports the URLconf, DRF and the verifier on its first request:
        a few small uploads first, so (d) measures intake and not start-up."""
        for round_ in range(4):
            archive = make_archive(workdir, 1, [DEFAULT_ID], seed=1000 + round_)
            upload(archive, self.endpoint, self.token, client="requests")
            archive.unlink()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.var, ignore_errors=True)


def upload(archive: Path, endpoint: str, token: str, client: str = "sendfile") -> float:
    """Seconds for one streamed POST of the archive (raises on a non-2xx reply).

    `sendfile` frames the request with http.client and sends the body with socket.sendfile, so the
    client costs next to no CPU on the cores it shares with the Portal (as a remote client would);
    `requests` sends it the way `asibench submit` does, read and written in user space."""
    import http.client
    from urllib.parse import urlsplit

    url = endpoint.rstrip("/") + "/api/v1/submissions/bundle"
    headers = {"Content-Type": "application/gzip", "Content-Length": str(archive.stat().st_size),
               "X-ASIBench-Filename": archive.name, "Authorization": f"Bearer {token}"}
    start = time.perf_counter()
    with archive.open("rb") as body:
        if client == "requests":
            import requests

            response = requests.post(url, data=body, timeout=600, allow_redirects=False, headers=headers)
            status, text = response.status_code, response.text
        else:
            parts = urlsplit(url)
            connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            connection = connection_class(parts.netloc, timeout=600)
            try:
                connection.putrequest("POST", parts.path)
                for name, value in headers.items():
                    connection.putheader(name, value)
                connection.endheaders()
                assert connection.sock is not None
                connection.sock.sendfile(body)
                reply = connection.getresponse()
                status, text = reply.status, reply.read().decode(errors="replace")
            finally:
                connection.close()
    seconds = time.perf_counter() - start
    if status not in (200, 201):
        raise SystemExit(f"upload failed: HTTP {status}: {text[:300]}")
    return seconds


KINDS = ("verify", "zlib", "isal", "tar")


def bench(size_mb: int, workdir: Path, args: argparse.Namespace, portal: ThrowawayPortal | None) -> None:
    endpoint, token = (args.endpoint, args.token) if args.endpoint else (
        (portal.endpoint, portal.token) if portal else (None, None))
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    uploads: list[float] = []
    archive = make_archive(workdir, size_mb, args.instance_id or [DEFAULT_ID])
    compressed = archive.stat().st_size
    try:
        # Round by round, each measurement once, the upload last: load from other processes then hits all of
        # them alike, and (d) is compared with the verifier of its own round as well as best with best.
        for round_ in range(args.repeat):
            if round_ and endpoint:  # the Portal answers a repeated upload from its dedupe without verifying
                archive.unlink()
                archive = make_archive(workdir, size_mb, args.instance_id or [DEFAULT_ID], seed=round_)
            for kind, reports in runs.items():
                reports.append(run_child(kind, archive))
            if endpoint and token:
                uploads.append(upload(archive, endpoint, token, args.client))
        best = {kind: min(reports, key=lambda r: r["seconds"]) for kind, reports in runs.items()}
        cpu = {kind: min(r["cpu"] for r in reports) for kind, reports in runs.items()}
        peak = {kind: max(r["peak_rss_mb"] for r in reports) for kind, reports in runs.items()}
        traced = run_child("verify", archive, "--tracemalloc") if args.tracemalloc else None
        unc = best["zlib"]["uncompressed"]

        def rate(seconds: float) -> str:
            return f"{unc / MB / seconds:6.1f} MB/s ({compressed / MB / seconds:5.1f} archive MB/s)"

        print(f"\n== {size_mb} MB of outputs: {best['verify']['instances']} results, tar {unc / MB:.1f} MB, "
              f"archive {compressed / MB:.1f} MB (ratio {unc / compressed:.2f}); best of {args.repeat}, "
              f"load average {os.getloadavg()[0]:.1f}")
        labels = {"verify": f"(a) verifier [{inflate_backend()}]", "zlib": "(b) zlib one-pass",
                  "isal": "(b') isal one-pass", "tar": "(c) tar+sha256"}
        for kind in KINDS:
            extra = (f", tracemalloc peak {traced['tracemalloc_peak'] / MB:.1f} MB"
                     if traced and kind == "verify" else "")
            print(f"  {labels[kind]:<24} {best[kind]['seconds']:6.2f} s  {rate(best[kind]['seconds'])}  "
                  f"cpu {cpu[kind]:5.2f} s  peak RSS {peak[kind]:.1f} MB{extra}")
        verify_s = best["verify"]["seconds"]
        print(f"  verifier / zlib one-pass: {best['zlib']['seconds'] / verify_s:.2f}x (target >= 1.5x);  "
              f"verifier / isal one-pass: {best['isal']['seconds'] / verify_s:.2f}x;  "
              f"verifier / tar+sha256: {best['tar']['seconds'] / verify_s:.2f}x")
        if uploads:
            seconds = min(uploads)
            per_round = sorted(r["seconds"] / u for r, u in zip(runs["verify"], uploads, strict=True))
            print(f"  (d) HTTP upload [{args.client}] {seconds:6.2f} s  {rate(seconds)}  "
                  f"vs verifier alone: {verify_s / seconds:.2f}x best/best (target >= 0.8x), "
                  f"{statistics.median(per_round):.2f}x median of rounds ({per_round[0]:.2f}..{per_round[-1]:.2f})")
        results[size_mb] = {"peak_verify_mb": peak["verify"]}
    finally:
        archive.unlink(missing_ok=True)


results: dict[int, dict[str, float]] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, action="append", help="outputs per bundle, MB (repeatable)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the fastest is reported")
    parser.add_argument("--tracemalloc", action="store_true", help="also run the verifier under tracemalloc")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--no-http", action="store_true", help="skip (d), the HTTP upload")
    parser.add_argument("--endpoint", help="a running Portal for (d) instead of a throwaway one")
    parser.add_argument("--token")
    parser.add_argument("--client", choices=("sendfile", "requests"), default="sendfile",
                        help="how (d) sends the body: sendfile (next to no client CPU, as from another machine) "
                             "or requests (as `asibench submit` does, on the same 2 cores)")
    parser.add_argument("--instance-id", action="append", help="seed42 instance ids to use (for --endpoint)")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "ARCHIVE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, archive = args.child[0], Path(args.child[1])
        cpu_start = cpu_seconds()
        report = {"verify": lambda: child_verify(archive, args.tracemalloc),
                  "zlib": lambda: child_onepass(archive, "zlib"), "isal": lambda: child_onepass(archive, "isal"),
                  "tar": lambda: child_tar(archive)}[kind]()
        report["cpu"] = cpu_seconds() - cpu_start
        report["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(report))
        return
    if args.endpoint and not args.token:
        parser.error("--endpoint needs --token")
    if inflate_backend() != "isal":
        print("NOTE: isal is not importable here: the verifier and (b') fall back to zlib")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, zlib {zlib.ZLIB_RUNTIME_VERSION}, "
          f"verifier inflater: {inflate_backend()}")
    workdir = Path(tempfile.mkdtemp(prefix="bundle-intake-", dir=args.workdir))
    try:
        portal = None if args.no_http or args.endpoint else ThrowawayPortal(workdir).__enter__()
        try:
            if portal is not None:
                portal.warm_up(workdir)
            for size in args.size_mb or [64, 512]:
                bench(size, workdir, args, portal)
        finally:
            if portal is not None:
                portal.__exit__(None, None, None)
        if len(results) > 1:
            peaks = [r["peak_verify_mb"] for r in results.values()]
            print(f"\nverifier peak RSS across sizes: {min(peaks):.1f}..{max(peaks):.1f} MB "
                  f"(spread {max(peaks) - min(peaks):.1f} MB, target within 10 MB)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
