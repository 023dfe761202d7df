"""The Portal on many hosts: a services host (PostgreSQL, Redis, S3), a web host and two worker hosts,
each a network namespace with its own address, var dir and checkout (see tests/hosts.py).

Every test checks that each result of each run is scored exactly once and none is lost.
"""

import shutil
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.hosts import Layout
from tests.support import OUTPUT_DIR, REFERENCE_AGENT, agent_results, bundle_of, wait_for

pytestmark = [pytest.mark.slow]

TASKS = 12  # tasks/ of the repository: every one of them, each with B1–B4
RESULTS_PER_RUN = TASKS * 4


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    """The four hosts, with every task of tasks/ in seed42, and `layout.bundle`: `asibench run` of the
    reference agent on every instance (pulled from S3), B1–B4, made while web and workers start."""
    hosts = Layout()

    def interrupted(signum: int, frame: object) -> None:
        raise SystemExit(f"signal {signum}: the layout is torn down first")

    # A SIGTERM to pytest would otherwise skip the teardown and leave the namespaces behind.
    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        hosts.start_backend()
        base = tmp_path_factory.mktemp("scale-out")
        made: dict[str, object] = {}

        def make_bundle() -> None:
            try:
                instances = hosts.pull_instances(base / "instances")
                made["tasks"] = len(list(instances.iterdir()))
                results = agent_results(instances, base / "reference", REFERENCE_AGENT)
                made["bundle"] = bundle_of(results, base / "bundles" / "reference.tar.gz")
            except BaseException as exc:  # re-raised on the test's thread
                made["error"] = exc

        maker = threading.Thread(target=make_bundle)
        maker.start()
        try:
            hosts.start_portal()
        finally:
            maker.join()
        hosts.step("reference agent run")
        if "error" in made:
            raise made["error"]  # type: ignore[misc]
        assert made["tasks"] == TASKS
        hosts.bundle = made["bundle"]  # type: ignore[attr-defined]
        yield hosts
    finally:
        hosts.stop()
        signal.signal(signal.SIGTERM, previous)
        logs = OUTPUT_DIR / "scale-out"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir(parents=True)
        if (hosts.base / "timings.log").exists():
            shutil.copy(hosts.base / "timings.log", logs / "timings.log")
        for host in hosts.hosts.values():
            for log in host.dir.glob("*.log"):
                (logs / host.name).mkdir(parents=True, exist_ok=True)
                shutil.copy(log, logs / host.name / log.name)
        hosts.cleanup()


@pytest.fixture(scope="module")
def bundle(layout: Layout) -> Path:
    return layout.bundle  # type: ignore[attr-defined]


_users = iter(range(10_000))


def submit(layout: Layout, bundle: Path, runs: int, confirm: bool = True) -> list[str]:
    """`runs` runs of the bundle, each by its own account, uploaded to the web host (and confirmed)."""
    tokens = layout.users_with_tokens([f"runner{next(_users)}@scale.example" for _ in range(runs)])
    ids = []
    for token in tokens:
        response = layout.upload(token, bundle)
        assert response.status_code == 201, response.text
        ids.append(response.json()["submission_id"])
    if confirm:
        layout.confirm(ids)
    return ids


def assert_each_result_scored_once(layout: Layout, ids: list[str]) -> None:
    state = layout.runs_state(ids)
    assert set(state.values()) == {"scored"}, layout.sql(
        "SELECT id, status, status_reason FROM submissions_submission WHERE id::text = ANY(%s)", ids)
    for sid in ids:
        entries, scores, distinct = layout.scored_once(sid)
        assert (entries, scores, distinct) == (RESULTS_PER_RUN,) * 3, sid
    errors = layout.sql(
        "SELECT s.reason FROM scoring_instancescore s JOIN scoring_scoringrun r ON r.id = s.scoring_run_id "
        "WHERE r.submission_id::text = ANY(%s) AND s.outcome = 'error'", ids)
    assert errors == [], "the reference agent's results all score"


def scores_so_far(layout: Layout, ids: list[str]) -> int:
    (count,), = layout.sql(
        "SELECT count(*) FROM scoring_instancescore s JOIN scoring_scoringrun r ON r.id = s.scoring_run_id "
        "WHERE r.submission_id::text = ANY(%s)", ids)
    return count


def board_reads(layout: Layout, rounds: int = 4) -> list[int]:
    """Statuses of concurrent board reads, more at once than the web host has workers x threads, each
    on its own connection, so that every gunicorn thread answers some."""
    def read(_: int) -> int:
        return requests.get(f"{layout.url}/leaderboard/", headers={"Connection": "close"}, timeout=60,
                            proxies={"http": "", "https": ""}).status_code

    with ThreadPoolExecutor(max_workers=16) as pool:
        return [status for _ in range(rounds) for status in pool.map(read, range(16))]


def test_no_host_sees_another_hosts_directory(layout):
    first, second = layout.workers
    assert (second.var_dir).is_dir() and any(second.checkout.iterdir()), "the test itself sees both"
    for host, other in [(first, second), (second, first), (layout.web, first)]:
        listed = host.run(["sh", "-c", f"ls -A {other.dir}; ls {other.checkout}/scoring 2>&1 || true"]).stdout
        assert "var" not in listed.split() and "pipeline.py" not in listed, (host.name, other.name, listed)
    assert "pipeline.py" in first.run(["ls", f"{first.checkout}/scoring"]).stdout


def test_every_task_at_every_level_is_scored_once_with_both_worker_hosts_taking_instances(layout, bundle):
    done_before = [layout.instances_done_by(w) for w in layout.workers]
    ids = submit(layout, bundle, runs=3)
    layout.wait_scored(ids, timeout=300)
    assert_each_result_scored_once(layout, ids)

    def taken() -> list[int]:
        return [layout.instances_done_by(w) - before for w, before in zip(layout.workers, done_before, strict=True)]
    # The run is scored inside its last task, a moment before the worker logs that task's success.
    wait_for(lambda: sum(taken()) >= 3 * TASKS, 30, f"every instance's success in the worker logs: {taken()}")
    assert all(n > 0 for n in taken()), f"instances scored per worker host: {taken()}"


def test_a_worker_host_killed_mid_run_leaves_the_other_to_finish_the_run(layout, bundle):
    second = layout.workers[1]
    received_before = second.log("worker").read_text(errors="replace").count("score_instance[")
    ids = submit(layout, bundle, runs=4)
    wait_for(lambda: second.log("worker").read_text(errors="replace").count("score_instance[") > received_before + 1,
             120, "worker-2 to take instances")
    assert set(layout.runs_state(ids).values()) != {"scored"}, "still mid-run when the host dies"
    second.kill_everything()
    assert second.pids() == [], "every process of worker-2 is gone"
    layout.wait_scored(ids, timeout=300)
    assert_each_result_scored_once(layout, ids)
    layout.start_worker(second)


def test_s3_stopping_during_an_upload_gives_503_with_a_reason_and_keeps_nothing(layout, bundle):
    (token,) = layout.users_with_tokens(["s3-upload@scale.example"])
    objects_before = set(layout.s3_keys("submissions/"))
    data = bundle.read_bytes()

    class StopsS3HalfWay:
        """The bundle as a sized body (Content-Length is sent); S3 goes down once half of it is out."""

        sent = 0

        def __len__(self) -> int:
            return len(data)

        def read(self, size: int = -1) -> bytes:
            if self.sent >= len(data) // 2 and "s3-relay" in layout.services.procs:
                layout.stop_s3()
            chunk = data[self.sent: self.sent + (size if size > 0 else len(data))]
            self.sent += len(chunk)
            return chunk

    session = requests.Session()
    session.trust_env = False
    try:
        response = session.post(f"{layout.url}/api/v1/submissions/bundle", data=StopsS3HalfWay(), timeout=180,
                                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"})
    finally:
        layout.start_s3()
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "storage_unavailable"
    assert "could not be stored" in response.json()["detail"]
    assert layout.sql("SELECT s.id FROM submissions_submission s JOIN accounts_user u ON u.id = s.owner_id "
                      "WHERE u.email = %s", "s3-upload@scale.example") == []
    assert set(layout.s3_keys("submissions/")) == objects_before


def test_s3_stopped_during_scoring_retries_then_fails_the_run_with_a_reason_never_a_silent_zero(layout, bundle):
    (sid,) = submit(layout, bundle, runs=1, confirm=False)
    layout.stop_s3()
    try:
        layout.confirm([sid])
        state = layout.wait_scored([sid], timeout=240)
    finally:
        layout.start_s3()
    assert state[sid] == "failed"
    (reason,), = layout.sql("SELECT status_reason FROM submissions_submission WHERE id = %s", sid)
    assert "infrastructure error" in reason and "could not read" in reason, reason
    assert scores_so_far(layout, [sid]) == 0, "no result was scored (0 or otherwise) while S3 was down"
    retried = sum(w.log("worker").read_text(errors="replace").count("Retry in") for w in layout.workers)
    assert retried > 0, "the instances were retried before the run failed"


@pytest.mark.parametrize("service", ["redis", "postgres"])
def test_a_restart_of_a_shared_service_mid_run_loses_and_duplicates_nothing(layout, bundle, service):
    ids = submit(layout, bundle, runs=3)
    wait_for(lambda: scores_so_far(layout, ids) > 0, 120, "scoring to start")
    stop, start = {"redis": (layout.stop_redis, layout.start_redis),
                   "postgres": (layout.stop_postgres, layout.start_postgres)}[service]
    board_reads(layout)  # every web thread now holds a database connection
    stop()
    time.sleep(2)
    start()
    # None of those connections survived the restart: no page may be answered with one.
    assert set(board_reads(layout)) == {200}
    layout.wait_scored(ids, timeout=400)
    assert_each_result_scored_once(layout, ids)


def test_under_load_uploads_are_stored_or_refused_with_a_reason_and_the_board_never_fails(layout, bundle):
    scoring = submit(layout, bundle, runs=2)
    tokens = layout.users_with_tokens([f"load{i}@scale.example" for i in range(20)])
    stop = threading.Event()
    board: list[tuple[int, float]] = []

    def read_board() -> None:
        session = requests.Session()
        session.trust_env = False
        while not stop.is_set():
            started = time.monotonic()
            status = session.get(f"{layout.url}/leaderboard/", timeout=60).status_code
            board.append((status, time.monotonic() - started))

    readers = [threading.Thread(target=read_board) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        with ThreadPoolExecutor(max_workers=20) as pool:
            uploads = list(pool.map(lambda token: layout.upload(token, bundle, timeout=180), tokens))
        time.sleep(15)  # keep reading the board for a fixed time while the runs score
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert board and all(status == 200 for status, _ in board), sorted({s for s, _ in board})
    for response in uploads:
        assert response.status_code < 500, response.text
        if response.status_code in (200, 201):
            sid = response.json()["submission_id"]
            (archive,), = layout.sql("SELECT archive FROM submissions_submission WHERE id = %s", sid)
            assert archive in layout.s3_keys("submissions/")
        else:
            assert response.json()["detail"] and response.json()["code"], response.text
    layout.wait_scored(scoring, timeout=300)
    assert_each_result_scored_once(layout, scoring)


def test_the_scale_out_bench_prints_results_per_minute_for_one_and_two_worker_hosts_and_board_latency(
    layout, bundle
):
    import importlib.util

    script = Path(__file__).parents[2] / "bench" / "scale_out.py"
    spec = importlib.util.spec_from_file_location("scale_out_bench", script)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lines = bench.measure(layout, bundle, runs=2, results_per_run=RESULTS_PER_RUN)
    print("\n".join(lines))
    assert lines[0].startswith("1 worker host :") and "results/min" in lines[0]
    assert lines[1].startswith("2 worker hosts:") and "results/min" in lines[1]
    for line in lines:
        assert "during scoring board p50 " in line and " p95 " in line and ", 0 5xx)" in line, line
