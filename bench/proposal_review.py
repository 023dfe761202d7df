"""Proposal review page benchmark: a maintainer opens the review page of a proposal whose last two
revisions hold ~100 MiB each (the task-size cap), every file changed between them.

    .venv/bin/python bench/proposal_review.py                 # 100 MiB per revision
    .venv/bin/python bench/proposal_review.py --total-mb 10 --rounds 3

Runs on the embedded defaults (SQLite and local files in a temporary ASIBENCH_VAR_DIR, removed at the
end). Each revision is a few prompts, code files of --code-kb KiB (under the diff cap, over what one
request diffs or renders) and data files of several MiB (over the diff cap) making up the rest. Prints
the page's time (best and median of --rounds, Django's test client in process) while the diff is with
a worker, the worker's time to compute and keep it, the page's time once it is kept, and, for scale,
difflib.unified_diff (what the page ran before) on one pair of code files. The issue's target: the page
answers in under a second.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
MiB = 1024 * 1024


def code_file(kib: int, revision: int, index: int) -> bytes:
    """Even files: source with one line changed per revision. Odd files: difflib's bad case, ~150 distinct
    short lines in a different random order in each revision (under 1% each, so none is "junk")."""
    if index % 2:
        rng = random.Random(revision * 1000 + index)
        return "".join(f"x{rng.randint(0, 150)}\n" for _ in range(kib * 1024 // 5)).encode()
    lines = [f"value_{index}_{n:07d} = {n} * {index}  # generated line {n}\n" for n in range(kib * 1024 // 48)]
    lines[len(lines) // 2] = f"answer = {revision}  # the line this revision changes\n"
    return "".join(lines).encode()


def data_file(size: int, revision: int, index: int) -> bytes:
    row = f"{revision},{index},0.5,1.25\n".encode()
    return row * (size // len(row))


def revision_files(total: int, code_kb: int, code_files: int, revision: int) -> dict[str, bytes]:
    files = {f"prompt_b{n}.md": f"# Level {n}\n\nSolve the task (revision {revision}).\n".encode() for n in range(1, 5)}
    files.update({f"code_{i:02d}.py": code_file(code_kb, revision, i) for i in range(code_files)})
    left = total - sum(len(d) for d in files.values())
    chunk = 9 * MiB
    for i in range(max(1, -(-left // chunk))):
        files[f"data/part_{i:02d}.csv"] = data_file(min(chunk, left - i * chunk), revision, i)
    return files


def timed(call, rounds: int) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mb", type=int, default=100)
    parser.add_argument("--code-kb", type=int, default=512)
    parser.add_argument("--code-files", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="asibench-bench-review-"))
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL"):
        os.environ.pop(name, None)
    os.environ.update(ASIBENCH_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1")
    try:
        run(args, var)
    finally:
        shutil.rmtree(var, ignore_errors=True)


def run(args: argparse.Namespace, var: Path) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from portal.accounts.models import User
    from portal.accounts.services import user_make_maintainer
    from proposals import diffs
    from proposals.files import IncomingFile, blob_store
    from proposals.models import Proposal, Revision, RevisionDiff, RevisionFile
    from tests.support import enrol_totp

    owner = User.objects.create_user(email="author@bench.example", password="x" * 20)
    maintainer = user_make_maintainer(user=User.objects.create_user(email="maya@bench.example", password="y" * 20))
    enrol_totp(maintainer)
    proposal = Proposal.objects.create(owner=owner, task_id="bench.big", name="Big", domain="bench",
                                       status=Proposal.Status.SUBMITTED, snapshot="0" * 64)
    total = args.total_mb * MiB
    made = []
    for number in (1, 2):
        files = revision_files(total, args.code_kb, args.code_files, number)
        frozen = Revision.objects.create(proposal=proposal, number=number, content_hash=f"{number:064d}",
                                         fields={"task_id": proposal.task_id}, validation={"checks": []})
        for path, data in files.items():
            digest = hashlib.sha256(data).hexdigest()
            blob, _ = blob_store(proposal.id, IncomingFile(path, io.BytesIO(data), len(data), digest))
            RevisionFile.objects.create(revision=frozen, path=path, blob=blob, sha256=digest, size=len(data))
        made.append(frozen)
        print(f"revision {number}: {len(files)} files, {sum(len(d) for d in files.values()) / MiB:.1f} MiB")

    client = Client()
    client.force_login(maintainer)
    url = f"/submit/proposals/{proposal.id}/review"

    def page() -> None:
        response = client.get(url)
        assert response.status_code == 200, response.status_code

    best, median = timed(page, args.rounds)
    assert RevisionDiff.objects.get(old=made[0], new=made[1]).status == "pending"
    print(f"review page, diff with a worker:   best {best:6.3f} s  median {median:6.3f} s")
    started = time.perf_counter()
    kept = diffs.revision_diff_store(old_id=made[0].id, new_id=made[1].id)
    notes = sorted({f.get("note", "diff") for f in kept.files})
    print(f"worker: diff computed and kept in  {time.perf_counter() - started:6.3f} s  ({len(kept.files)} files: "
          f"{', '.join(notes)})")
    best, median = timed(page, args.rounds)
    print(f"review page, diff kept:            best {best:6.3f} s  median {median:6.3f} s")
    import difflib

    from proposals.diffing import unified_diff

    for kib in sorted({k for k in (32, 64, 128) if k < args.code_kb} | {args.code_kb}):
        old, new = (code_file(kib, n, 1).decode().splitlines(keepends=True) for n in (1, 2))
        started = time.perf_counter()
        "".join(unified_diff(old, new, "a", "b"))
        ours = time.perf_counter() - started
        if kib > 128:  # difflib grows about 3.6x per doubling here: seconds at 128 KiB, minutes past it
            print(f"bad case, {kib:4d} KiB pair: ours {ours:6.3f} s  (difflib not run at this size)")
            continue
        started = time.perf_counter()
        "".join(difflib.unified_diff(old, new))
        print(f"bad case, {kib:4d} KiB pair: ours {ours:6.3f} s  difflib (the page's diff before) "
              f"{time.perf_counter() - started:6.3f} s")


if __name__ == "__main__":
    main()
