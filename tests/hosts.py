"""The Portal scaled out over "hosts" on this machine: network namespaces joined by one bridge.

    services  PostgreSQL, Redis (append-only file) and S3 (moto behind a relay the test can stop)
    web       gunicorn: pages, API, intake; its own var dir and checkout
    worker-1  Celery worker (bwrap) and beat; its own var dir and checkout
    worker-2  Celery worker (bwrap); its own var dir and checkout

Every host runs from its own copy of the repository and its own ASIBENCH_VAR_DIR; each host's processes
run in their own mount namespace where the other hosts' directories are empty, and the catalog is
loaded from a copy of tasks/ that is deleted once loaded, so a worker that read task files from
another host's disk would fail. Needs root (ip netns, veth, bridge) and iproute2.

Used by tests/scaleout and bench/scale_out.py; `Layout.stop()` removes every namespace, link and
process it made, also after a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from contracts.archives import extract_tree

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
VENV_BIN = Path(sys.executable).parent
BUCKET = "asibench"
SECRET = "scale-out-test-secret-key-not-for-production-0123456789"


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        raise RuntimeError("No PostgreSQL server binaries: run scripts/ensure-services.sh")
    return found[-1].parent


def _wait(predicate, timeout: float, what: str, interval: float = 0.3):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Host:
    name: str
    ns: str
    addr: str
    dir: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    # The other hosts' directories: covered by an empty tmpfs in this host's own mount namespace.
    hidden: list[Path] = field(default_factory=list)

    @property
    def var_dir(self) -> Path:
        return self.dir / "var"

    @property
    def checkout(self) -> Path:
        return self.dir / "checkout"

    def log(self, name: str) -> Path:
        return self.dir / f"{name}.log"

    def _inside(self, user: str | None = None) -> list[str]:
        """The prefix that runs a command on this host: its network namespace, and a mount namespace
        (`ip netns exec` makes one, slave to the machine's) where no other host's directory is visible."""
        hide = ('while [ "$1" != -- ]; do mount -t tmpfs -o size=64k,mode=0755 other-host "$1" || exit 97; '
                'shift; done; shift; exec "$@"')
        return (["ip", "netns", "exec", self.ns, "sh", "-c", hide, "sh", *map(str, self.hidden), "--"]
                + (["runuser", "-u", user, "--"] if user else []))

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
              user: str | None = None) -> subprocess.Popen:
        prefix = self._inside(user)
        with self.log(name).open("a") as log:
            proc = subprocess.Popen(prefix + argv, env=env, cwd=cwd or self.dir, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def run(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
        done = subprocess.run([*self._inside(), *argv], env=env, cwd=cwd or self.dir,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"{self.name}: {' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
        return done

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            _killpg(proc.pid)
            proc.wait(timeout=10)

    def pids(self) -> list[int]:
        """Live (not zombie) processes in the host's network namespace."""
        out = _run("ip", "netns", "pids", self.ns, check=False).stdout
        return [int(p) for p in out.split() if _state_of(int(p)) not in (None, "Z")]

    def kill_everything(self) -> None:
        """SIGKILL of every process of the host: its network namespace's, and the sessions it started
        (sandboxes run in their own network namespace, but in a session of the host's processes).
        Repeated until none is left, since a process may fork while the others are being killed."""
        sessions = {p.pid for p in self.procs.values()}
        for _ in range(50):
            victims = set(self.pids()) | {pid for pid in _all_pids() if _session_of(pid) in sessions}
            victims = {pid for pid in victims if _state_of(pid) not in (None, "Z")}
            if not victims:
                break
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _all_pids() -> list[int]:
    return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]


def _state_of(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _session_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return None


def _copy_checkout(dest: Path) -> None:
    """The repository's files (tracked and new, not ignored) as another host's checkout would hold them."""
    listed = _run("git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard").stdout.split("\0")
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file() and not source.is_symlink():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


class Layout:
    """Four hosts on one bridge; `start()` brings up services, web and both workers."""

    def __init__(self, base: Path | None = None, *, workers: int = 2, env: dict[str, str] | None = None):
        pid = os.getpid()
        self.tag = f"asb{pid}"
        self.subnet = f"10.231.{20 + pid % 200}"
        self.base = base or Path(tempfile.mkdtemp(prefix=f"asb-{pid}-hosts-"))
        self.base.chmod(0o755)  # the PostgreSQL server runs as `postgres` and must reach its data dir
        self.bridge = f"{self.tag}br"
        names = ["services", "web"] + [f"worker-{i + 1}" for i in range(workers)]
        self.hosts = {name: Host(name, f"asb-{pid}-{name}", f"{self.subnet}.{i + 2}", self.base / name)
                      for i, name in enumerate(names)}
        for host in self.hosts.values():
            host.hidden = [other.dir for other in self.hosts.values() if other is not host]
        self.extra_env = env or {}
        self.made_links: list[str] = []

    # -- addresses -------------------------------------------------------------------------------
    @property
    def services(self) -> Host:
        return self.hosts["services"]

    @property
    def web(self) -> Host:
        return self.hosts["web"]

    @property
    def workers(self) -> list[Host]:
        return [h for n, h in self.hosts.items() if n.startswith("worker-")]

    @property
    def url(self) -> str:
        return f"http://{self.web.addr}:8000"

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@{self.services.addr}:5432/asibench"

    @property
    def s3_endpoint(self) -> str:
        return f"http://{self.services.addr}:9000"

    def env(self, host: Host, **extra: str) -> dict[str, str]:
        """What a Portal process on `host` is given: the shared services' addresses, its own var dir."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ASIBENCH_", "CELERY_", "DATABASE_", "AI4SCI_", "DJANGO_"))}
        env.update(
            PYTHONPATH=str(host.checkout), PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings",
            ASIBENCH_VAR_DIR=str(host.var_dir), SECRET_KEY=SECRET, DEBUG="0",
            SECURE_SSL_REDIRECT="0",  # plain HTTP on the hosts' private bridge; TLS is the proxy's job
            ALLOWED_HOSTS=f"{self.web.addr},127.0.0.1,localhost",
            DATABASE_URL=self.database_url,
            CELERY_BROKER_URL=f"redis://{self.services.addr}:6379/0",
            CACHE_URL=f"redis://{self.services.addr}:6379/1",  # rate limits hold across web hosts
            ASIBENCH_S3_BUCKET=BUCKET, ASIBENCH_S3_ENDPOINT_URL=self.s3_endpoint, ASIBENCH_S3_REGION="us-east-1",
            ASIBENCH_S3_ACCESS_KEY_ID="test", ASIBENCH_S3_SECRET_ACCESS_KEY="test",
            # A killed host's unacknowledged messages go back to the queue after this many seconds.
            CELERY_VISIBILITY_TIMEOUT="30",
            ASIBENCH_SCORING_REAPER_INTERVAL="5", ASIBENCH_SCORING_QUEUED_RESEND_AFTER="20",
            ASIBENCH_SCORING_STUCK_AFTER="120", ASIBENCH_SCORING_RETRIES="4", ASIBENCH_SCORING_RETRY_BACKOFF="2",
        )
        env.update(self.extra_env)
        env.update(extra)
        return env

    # -- network ---------------------------------------------------------------------------------
    def _network(self) -> None:
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        self.made_links.append(self.bridge)
        _run("ip", "addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for i, host in enumerate(self.hosts.values()):
            host.dir.mkdir(parents=True, exist_ok=True)
            host.dir.chmod(0o755)
            _run("ip", "netns", "add", host.ns)
            outside, inside = f"{self.tag}h{i}", f"{self.tag}n{i}"
            _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            self.made_links.append(outside)
            _run("ip", "link", "set", inside, "netns", host.ns)
            _run("ip", "link", "set", outside, "master", self.bridge)
            _run("ip", "link", "set", outside, "up")
            _run("ip", "-n", host.ns, "link", "set", "lo", "up")
            _run("ip", "-n", host.ns, "addr", "add", f"{host.addr}/24", "dev", inside)
            _run("ip", "-n", host.ns, "link", "set", inside, "up")

    # -- services --------------------------------------------------------------------------------
    def _pg_data(self) -> Path:
        return self.services.dir / "pg"

    def start_postgres(self) -> None:
        data = self._pg_data()
        pg = _pg_bin()
        if not data.exists():
            data.mkdir()
            shutil.chown(data, "postgres", "postgres")
            _run("runuser", "-u", "postgres", "--", str(pg / "initdb"), "-D", str(data), "-A", "trust",
                 "-U", "postgres", "--no-sync")
            with (data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {self.subnet}.0/24 trust\n")
        self.services.start("postgres", [str(pg / "postgres"), "-D", str(data), "-c",
                                         f"listen_addresses={self.services.addr}", "-c",
                                         f"unix_socket_directories={data}", "-c", "max_connections=200",
                                         "-c", "fsync=off"], user="postgres")
        _wait(lambda: _pg_ready(self.services.addr), 60, "PostgreSQL on the services host")

    def stop_postgres(self) -> None:
        self.services.stop("postgres", signal.SIGINT)  # fast shutdown: clients are disconnected

    def start_redis(self) -> None:
        redis_dir = self.services.dir / "redis"
        redis_dir.mkdir(exist_ok=True)
        self.services.start("redis", ["redis-server", "--bind", self.services.addr, "--port", "6379",
                                      "--dir", str(redis_dir), "--save", "", "--appendonly", "yes",
                                      "--appendfsync", "always", "--protected-mode", "no"])
        _wait(lambda: _tcp_open(self.services.addr, 6379), 30, "Redis on the services host")

    def stop_redis(self) -> None:
        self.services.stop("redis")

    def start_s3(self) -> None:
        if "moto" not in self.services.procs:
            self.services.start("moto", [str(VENV_BIN / "moto_server"), "-H", "127.0.0.1", "-p", "5000"])
        self.services.start("s3-relay", [PYTHON, str(REPO / "tests" / "tcp_relay.py"), self.services.addr,
                                         "9000", "127.0.0.1", "5000"])
        _wait(lambda: _http_ok(self.s3_endpoint), 30, "S3 on the services host")

    def stop_s3(self) -> None:
        """S3 stops answering (connections refused); moto keeps its objects for `start_s3`."""
        self.services.stop("s3-relay", signal.SIGKILL)

    def s3(self):  # noqa: ANN201
        import boto3

        return boto3.client("s3", endpoint_url=self.s3_endpoint, aws_access_key_id="test",
                            aws_secret_access_key="test", region_name="us-east-1")

    def s3_keys(self, prefix: str = "") -> list[str]:
        pages = self.s3().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def sql(self, query: str, *params: object) -> list[tuple]:
        import psycopg

        with psycopg.connect(f"host={self.services.addr} user=postgres dbname=asibench", autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return list(cursor.fetchall()) if cursor.description else []

    # -- portal hosts ----------------------------------------------------------------------------
    def manage(self, host: Host, *args: str, timeout: float = 900, **env: str) -> str:
        return host.run([PYTHON, "manage.py", *args], env=self.env(host, **env), cwd=host.checkout,
                        timeout=timeout).stdout

    def shell(self, host: Host, code: str) -> str:
        return self.manage(host, "shell", "-c", code)

    def start_web(self, wait: bool = True) -> None:
        self.web.start("gunicorn", [str(VENV_BIN / "gunicorn"), "config.wsgi:application", "--bind",
                                    f"{self.web.addr}:8000", "--workers", "3", "--threads", "4", "--timeout", "120"],
                       env=self.env(self.web), cwd=self.web.checkout)
        if wait:
            _wait(lambda: _http_ok(self.url + "/healthz"), 90, "gunicorn on the web host")

    def start_worker(self, host: Host, concurrency: int = 2, beat: bool = False, wait: bool = True) -> None:
        env = self.env(host)
        log = host.log("worker")
        before = log.read_text(errors="replace").count("ready.") if log.exists() else 0
        host.start("worker", [PYTHON, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO",
                              "--concurrency", str(concurrency), "--hostname", f"{host.name}@{host.ns}",
                              "--without-gossip", "--without-mingle"], env=env, cwd=host.checkout)
        if beat:
            host.start("beat", [PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                                "--schedule", str(host.var_dir / "celerybeat-schedule")], env=env, cwd=host.checkout)
        if wait:
            _wait(lambda: log.read_text(errors="replace").count("ready.") > before, 120, f"{host.name}'s worker")

    def start_backend(self, catalog_tasks: list[str] | None = None) -> None:
        """The network, the services, each host's checkout, the schema and the catalog (from a copy of
        tasks/ that is deleted once loaded: whatever a worker needs of a task must be in S3 or the database)."""
        self._t0 = time.monotonic()
        self._network()
        self.start_postgres()
        _create_db(self.services.addr)
        self.start_redis()
        self.start_s3()
        self.s3().create_bucket(Bucket=BUCKET)
        for host in (self.web, *self.workers):
            _copy_checkout(host.checkout)
            host.var_dir.mkdir(parents=True, exist_ok=True)
        self.step("services, checkouts")
        self.manage(self.web, "migrate", "--noinput")
        self.step("migrate")
        loader = self.base / "loader-tasks"
        shutil.copytree(REPO / "tasks", loader, ignore=shutil.ignore_patterns("__pycache__"))
        args = ["catalog_load", "--tasks-dir", str(loader), "--datasets", "seed42", "--strict"]
        if catalog_tasks:
            args += ["--tasks", ",".join(catalog_tasks)]
        self.manage(self.web, *args)
        shutil.rmtree(loader)
        self.step("catalog_load")

    def start_portal(self) -> None:
        """gunicorn on the web host, a worker on each worker host and beat on the first, started together."""
        self.start_web(wait=False)
        for i, host in enumerate(self.workers):
            self.start_worker(host, beat=i == 0, wait=False)
        _wait(lambda: _http_ok(self.url + "/healthz"), 120, "gunicorn on the web host")
        for host in self.workers:
            _wait(lambda h=host: "ready." in h.log("worker").read_text(errors="replace"), 120, f"{host.name}'s worker")
        self.step("web and workers")

    def step(self, what: str) -> None:
        with (self.base / "timings.log").open("a") as log:
            log.write(f"{time.monotonic() - self._t0:7.1f}s {what}\n")

    def start(self, catalog_tasks: list[str] | None = None) -> None:
        self.start_backend(catalog_tasks)
        self.start_portal()

    def stop(self) -> None:
        for host in self.hosts.values():
            host.kill_everything()
        for host in self.hosts.values():
            _run("ip", "netns", "del", host.ns, check=False)
        for link in self.made_links:
            _run("ip", "link", "del", link, check=False)

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- what tests do ---------------------------------------------------------------------------
    def users_with_tokens(self, emails: list[str]) -> list[str]:
        """A verified account and a CLI token for each email (one Django start for all of them)."""
        code = (
            "from allauth.account.models import EmailAddress\n"
            "from portal.accounts.models import User\n"
            "from portal.accounts.services import cli_token_create\n"
            f"for email in {json.dumps(emails)}:\n"
            "    u = User.objects.create_user(email=email, password='x-scale-out-9', display_name='S')\n"
            "    EmailAddress.objects.create(user=u, email=email, verified=True, primary=True)\n"
            "    print('TOKEN', cli_token_create(user=u, name='scale').plaintext)\n"
        )
        out = self.shell(self.web, code)
        return [line.split(" ", 1)[1].strip() for line in out.splitlines() if line.startswith("TOKEN ")]

    def upload(self, token: str, archive: Path, timeout: float = 120) -> requests.Response:
        session = requests.Session()
        session.trust_env = False
        with archive.open("rb") as body:
            return session.post(f"{self.url}/api/v1/submissions/bundle", data=body, timeout=timeout,
                                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip",
                                         "X-Asibench-Filename": archive.name})

    def confirm(self, submission_ids: list[str]) -> None:
        """Confirm drafts as their owners do on the confirm page (one Django start for all of them)."""
        code = (
            "from portal.submissions.models import Submission\n"
            "from portal.submissions.services import submission_confirm\n"
            f"for sid in {json.dumps(submission_ids)}:\n"
            "    s = Submission.objects.get(id=sid)\n"
            "    submission_confirm(user=s.owner, submission_id=sid)\n"
        )
        self.shell(self.web, code)

    def pull_instances(self, dest: Path, dataset: str = "seed42") -> Path:
        """The public instance archives of `dataset`, unpacked as `task pull` would, read from S3."""
        dest.mkdir(parents=True, exist_ok=True)
        s3 = self.s3()
        for (name,) in self.sql("SELECT input_archive FROM scoring_instance WHERE dataset_id = %s", dataset):
            body = s3.get_object(Bucket=BUCKET, Key=name)["Body"]
            with tarfile.open(fileobj=body, mode="r|gz") as tar:
                extract_tree(tar, dest)
        return dest

    def runs_state(self, submission_ids: list[str]) -> dict[str, str]:
        rows = self.sql("SELECT id::text, status FROM submissions_submission WHERE id::text = ANY(%s)",
                        submission_ids)
        return dict(rows)

    def wait_scored(self, submission_ids: list[str], timeout: float) -> dict[str, str]:
        def ended() -> dict[str, str] | None:
            state = self.runs_state(submission_ids)
            return state if all(state.get(s) in ("scored", "failed") for s in submission_ids) else None

        return _wait(ended, timeout, "every run to end", interval=1)

    def scored_once(self, submission_id: str) -> tuple[int, int, int]:
        """(results, scores in the run that completed, distinct results among them)."""
        (entries,), = self.sql("SELECT count(*) FROM submissions_submissionentry WHERE submission_id = %s",
                               submission_id)
        (scores, distinct), = self.sql(
            "SELECT count(*), count(DISTINCT s.entry_id) FROM scoring_instancescore s "
            "JOIN scoring_scoringrun r ON r.id = s.scoring_run_id "
            "WHERE r.submission_id = %s AND r.status = 'complete'", submission_id)
        return entries, scores, distinct

    def instances_done_by(self, host: Host) -> int:
        lines = host.log("worker").read_text(errors="replace").splitlines()
        return sum(1 for line in lines if "Task scoring.score_instance[" in line and " succeeded in " in line)


def _pg_ready(addr: str) -> bool:
    done = _run(str(_pg_bin() / "pg_isready"), "-h", addr, "-p", "5432", check=False)
    return done.returncode == 0


def _create_db(addr: str) -> None:
    import psycopg

    with psycopg.connect(f"host={addr} user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE asibench")


def _tcp_open(addr: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((addr, port), timeout=1):
            return True
    except OSError:
        return False


def _http_ok(url: str) -> bool:
    try:
        session = requests.Session()
        session.trust_env = False
        return session.get(url, timeout=3).status_code < 500
    except requests.RequestException:
        return False
