"""The default backend: bubblewrap namespaces plus rlimits, in one of two modes (see
`scoring.sandbox.modes` and docs/sandboxes.md): as root, under a throwaway host uid per run;
as anyone else, in a user namespace of the caller's uid with a watchdog.

Effective isolation (each point is exercised by tests/scoring/sandbox):
- New user, mount, PID, IPC, UTS, cgroup and (unless `limits.network`) network namespaces;
  nested user namespaces disabled; no capabilities; NoNewPrivs; `--new-session`,
  `--die-with-parent`; a seccomp filter that denies bpf, keyrings, userfaultfd, perf,
  io_uring, module and kexec loading and ptrace (`scoring.sandbox.seccomp`).
- The root is a read-only tmpfs holding read-only binds of /usr (plus the /bin, /lib…
  links), a few /etc files, a synthetic /etc/passwd and /etc/group, a fresh /proc, a
  read-only /dev, size-capped tmpfs /tmp and /dev/shm, the caller's read-only mounts, and
  `workdir` read-write at its own absolute path, which is also the cwd.
- The command's environment is exactly BASE_ENV plus `limits.env`, given to bwrap as its own
  environment (which it passes on), never as `--setenv` arguments: values may be keys, and any
  local user can read a command line (`sandbox_environment`).
- The command runs as uid/gid 65534 inside.
  Root mode (the caller is root and can switch to the per-run uids): that id maps to a host
  uid/gid of its own, `uid_base + slot`, with the slot held by an flock for the run; so the
  kernel's per-user RLIMIT_NPROC counts this sandbox alone and holds against a fork bomb, and
  every leftover process can be found and killed by uid. `workdir` is chowned to that uid for
  the run and back to its owner afterwards (the whole tree, to the workdir's owner).
  Unprivileged mode (anyone else): it maps to the caller's own uid. Since Linux 5.14 the kernel
  counts RLIMIT_NPROC per user namespace too, so the command is started through util-linux's
  `prlimit`, which sets RLIMIT_NPROC inside the run's fresh user namespace: there it counts the
  run's own processes only, never the caller's others. `mode()` proves this once per process
  with a real run (`_probe`); where it does not hold the Portal refuses the mode and the CLI
  falls back to a cap that also counts the caller's processes, with a warning.
- RLIMIT_CPU (SIGXCPU, SIGKILL one second later), RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_CORE=0
  are set in the preexec hook and inherited by bwrap and all below it (RLIMIT_NPROC too, in
  root mode).
- Whole-run limits without cgroup v2 (this code does not use cgroups): the process count as
  above; a poll every 0.2 s sums the resident memory of the run's process tree plus its /tmp
  and /dev/shm tmpfs against `memory_bytes`, and the workdir's bytes against
  `max_scratch_bytes`, and kills the run when either is exceeded (see `_whole_run_watch`).
- At the end, the PID namespace's init is SIGKILLed through a pidfd (bwrap's --info-fd names
  it) and the run waits until it is gone: the kernel kills every process of the namespace
  before its init is reported dead, so no process of the run survives it (in root mode every
  process of the slot uid is killed too).
- Whatever the command leaves in `workdir` is hostile: host code reads it only through
  `scoring.sandbox.outputs` (no link following, no special files).
- Read-only mounts must be world-readable (o+r, o+x on directories) in root mode: they are
  read as an unprivileged uid. Their parents need not be (see `_child_setup`). In the
  unprivileged mode the caller must be able to read them.

The preexec hook runs Python between fork and exec; it only makes system calls, which is
safe in the prefork Celery worker and the CLI, both single-threaded when they call `run`.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import random
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .base import (
    BASE_ENV,
    BackendUnavailable,
    Limits,
    Mount,
    MountError,
    SandboxBackend,
    SandboxError,
    SandboxResult,
    checked_run_args,
    classify,
    normalize_mounts,
)
from .modes import BWRAP_ROOT, BWRAP_UNPRIVILEGED, SandboxMode
from .process import Completed, Watch, disk_usage, drive, rlimit_preexec, workdir_owned_by
from .seccomp import filter_program

logger = logging.getLogger(__name__)

INSIDE_ID = 65534
DEFAULT_UID_BASE = 1_900_000_000
DEFAULT_UID_SLOTS = 4096
# bwrap's own processes (the outer monitor and the PID-namespace init) run under the same
# uid and count against RLIMIT_NPROC.
BWRAP_OVERHEAD_PROCESSES = 2
# The mode probe: a shell that forks once, so it runs only where the process cap holds per run.
PROBE_LIMITS = Limits(wall_clock_seconds=30, cpu_seconds=10, memory_bytes=256 << 20, max_processes=2,
                      max_file_bytes=1 << 20, max_output_bytes=1 << 16)
# How long the namespace's init may take to go once killed before the run counts as broken.
_INIT_GONE_SECONDS = 10.0

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_ALWAYS = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
               "/etc/alternatives", "/etc/nsswitch.conf")
_ETC_NETWORK = ("/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf",
                "/etc/services", "/etc/protocols", "/etc/ssl", "/etc/ca-certificates",
                "/etc/pki")
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_PASSWD = f"nobody:x:{INSIDE_ID}:{INSIDE_ID}:sandbox:/tmp:/usr/sbin/nologin\n"
_GROUP = f"nogroup:x:{INSIDE_ID}:\n"


class BwrapBackend(SandboxBackend):
    name = "bwrap"

    def __init__(
        self,
        *,
        bwrap: str | None = None,
        uid_base: int = DEFAULT_UID_BASE,
        uid_slots: int = DEFAULT_UID_SLOTS,
        lock_dir: Path | None = None,
        prlimit: str | None = None,
    ) -> None:
        found = bwrap or shutil.which("bwrap")
        if not found or not os.access(found, os.X_OK):
            raise BackendUnavailable("bubblewrap (bwrap) is not installed")
        self.bwrap = found
        self.uid_base = uid_base
        self.uid_slots = uid_slots
        self.lock_dir = lock_dir or Path(tempfile.gettempdir()) / "asibench-sandbox"
        self.seccomp_filter = filter_program()
        self.prlimit = prlimit if prlimit is not None else (shutil.which("prlimit", path="/usr/bin:/bin") or "")

    def per_run_uids(self) -> bool:
        """Root mode: the caller is root and can switch to the per-run uids."""
        return os.geteuid() == 0 and _can_switch_to(self.uid_base)

    def mode(self) -> SandboxMode:
        if self.per_run_uids():
            return SandboxMode(BWRAP_ROOT, self._probe())
        return SandboxMode(BWRAP_UNPRIVILEGED, self._probe())

    def run(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
    ) -> SandboxResult:
        per_run = self.per_run_uids()
        in_namespace = False
        if not per_run:
            problem = self._probe()
            in_namespace = problem is None
            if problem is not None:
                _warn_once(f"{problem} (running anyway: a local run)")
        return self._run(argv, workdir, read_only_mounts, limits, per_run=per_run, nproc_in_namespace=in_namespace)

    def _probe(self) -> str | None:
        """Why this mode cannot enforce the server's limits here, else None; found by a real run
        that forks once under a process cap that only per-namespace counting lets it pass.
        Successes are remembered for the life of the process, failures tried again."""
        key = (os.geteuid(), self.bwrap, self.prlimit, self.per_run_uids())
        if key in _probed:
            return None
        per_run = key[-1]
        if not per_run and not self.prlimit:
            return ("the unprivileged bwrap sandbox needs util-linux's prlimit in /usr/bin or /bin to cap the "
                    "process count of a run; install util-linux")
        with tempfile.TemporaryDirectory(prefix="asibench-probe-") as tmp:
            try:
                result = self._run(["/bin/sh", "-c", "/bin/true && echo ok"], Path(tmp), [], PROBE_LIMITS,
                                   per_run=per_run, nproc_in_namespace=not per_run)
            except (SandboxError, OSError, subprocess.SubprocessError) as exc:
                who = "root" if per_run else f"uid {os.geteuid()}"
                return (f"bubblewrap cannot start a sandbox here as {who}: {exc}. Unprivileged user namespaces "
                        "may be disabled (sysctl kernel.unprivileged_userns_clone, AppArmor's "
                        "kernel.apparmor_restrict_unprivileged_userns, or a container's seccomp profile); "
                        "allow them, run the worker as root, or use the docker backend (ASIBENCH_SANDBOX=docker)")
        if result.stdout_text.strip() != "ok":
            if per_run:
                return f"the bwrap sandbox's probe run failed: {result.reason or result.stderr_text[-500:]!r}"
            return ("the unprivileged bwrap sandbox cannot cap a run's processes: this kernel counts "
                    f"RLIMIT_NPROC per host user, not per user namespace (Linux 5.14 or later needed; this is "
                    f"{os.uname().release}; {result.stderr_text[-300:]!r}). Run the worker as root, or use the "
                    "docker backend (ASIBENCH_SANDBOX=docker)")
        _probed.add(key)
        return None

    def _run(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
        *,
        per_run: bool,
        nproc_in_namespace: bool,
    ) -> SandboxResult:
        workdir = checked_run_args(argv, workdir)
        mounts = normalize_mounts(read_only_mounts)
        for src, _ in mounts:
            _check_readable(src, world=per_run)

        with self._slot(per_run) as slot, _FdSet() as fds:
            binds = [*mounts, (workdir, str(workdir))]
            rlimits = _rlimits(limits)
            sources, host_uid, argv = self._run_as(slot, binds, argv, limits, rlimits,
                                                   nproc_in_namespace=nproc_in_namespace)
            block_r, block_w = os.pipe()
            fds.keep(block_r)
            os.write(block_w, b"x")
            os.close(block_w)
            info_r, info_w = os.pipe()
            fds.keep(info_r)
            fds.keep(info_w)
            ro = [(source, dest) for source, (_, dest) in zip(sources, mounts, strict=False)]
            args = self.command(argv, workdir, ro, sources[-1], limits, fds)
            args[1:1] = ["--block-fd", str(block_r), "--info-fd", str(info_w)]
            stage_binds = [(str(src), stage) for (src, _), stage in
                           zip(binds, sources, strict=True)] if slot else []
            started: list[int] = []  # bwrap's pid, the root of every process of the run
            init = _NamespaceInit()

            def on_started(pid: int) -> None:
                started.append(pid)
                fds.close(info_w)  # bwrap holds the only write end now: EOF once it wrote or died
                init.find(info_r, bwrap_pid=pid)

            try:
                with workdir_owned_by(workdir, host_uid if slot else None) as handback:
                    try:
                        done = drive(
                            args,
                            cwd=Path("/"),
                            env=sandbox_environment(limits),
                            timeout=limits.wall_clock_seconds,
                            output_cap=limits.max_output_bytes,
                            pass_fds=fds.passed,
                            preexec_fn=_child_setup(rlimits, stage_binds, slot.uid if slot else None),
                            on_started=on_started,
                            watch=_whole_run_watch(started, workdir, limits),
                        )
                    finally:
                        init.kill()
                        if slot:
                            _kill_uid(slot.uid)
            finally:
                init.close()
            # bwrap reads the byte only after every mount and the pivot succeeded; if it is
            # still in the pipe, bwrap died setting up and the command never ran.
            os.set_blocking(block_r, False)
            try:
                setup_failed = os.read(block_r, 1) == b"x"
            except BlockingIOError:
                setup_failed = False

        return self._result(done, limits, setup_failed=setup_failed, handback=handback)

    def _run_as(self, slot: _Slot | None, binds: list[tuple[Path, str]], argv: list[str], limits: Limits,
                rlimits: dict[int, tuple[int, int]], *, nproc_in_namespace: bool) -> tuple[list[str], int, list[str]]:
        """Who the run is on the host and how its processes are counted: (the bind sources, the host uid, the
        argv). `rlimits` gains the process cap where the host counts it."""
        if slot is not None:
            # bwrap's own processes (outer monitor and namespace init) run under this uid too.
            rlimits[resource.RLIMIT_NPROC] = _nproc(limits.max_processes + BWRAP_OVERHEAD_PROCESSES)
            return _prepare_stage(slot.stage, [src for src, _ in binds]), slot.uid, argv
        # Not root: bwrap binds the real paths, which the caller can reach.
        host_uid = os.getuid()
        if nproc_in_namespace:
            # The run's processes are counted in its own user namespace: its init (bwrap) plus the command and
            # all it starts. The caller's own limit stays on bwrap.
            argv = [self.prlimit, f"--nproc={limits.max_processes + 1}", "--", *argv]
        else:
            # Counted per host user: the caller's other processes share the cap.
            rlimits[resource.RLIMIT_NPROC] = _nproc(
                _count_processes(host_uid) + limits.max_processes + BWRAP_OVERHEAD_PROCESSES)
        return [str(src) for src, _ in binds], host_uid, argv

    def _result(self, done: Completed, limits: Limits, *, setup_failed: bool, handback: list[str]) -> SandboxResult:
        stderr = done.stderr.getvalue()
        if setup_failed and not done.timed_out:
            said = stderr[-2000:].decode("utf-8", errors="replace").strip()
            raise SandboxError(f"bwrap could not set up the sandbox: {said or 'it exited without a word'}")
        returncode = _decode_exit(done.returncode)
        stopped = done.stopped or classify(returncode, stderr, done.timed_out, limits)
        if handback:
            stopped = ("workdir", handback[0])
        return SandboxResult.captured(backend=self.name, returncode=returncode, stdout=done.stdout,
                                      stderr=done.stderr, timed_out=done.timed_out,
                                      duration_seconds=done.duration_seconds, stopped=stopped)

    def command(
        self,
        argv: list[str],
        workdir: Path,
        mounts: list[tuple[str, str]],
        workdir_source: str,
        limits: Limits,
        fds: _FdSet,
    ) -> list[str]:
        """The bwrap argv; `mounts` are (source, inside path) pairs."""
        a = [self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
             "--uid", str(INSIDE_ID), "--gid", str(INSIDE_ID), "--hostname", "sandbox",
             "--die-with-parent", "--new-session",
             "--seccomp", str(fds.data(self.seccomp_filter))]
        if limits.network:
            a.append("--share-net")
        for d in _SYSTEM_DIRS:
            if os.path.islink(d):
                a += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                a += ["--ro-bind", d, d]
        for f in _ETC_ALWAYS + (_ETC_NETWORK if limits.network else ()):
            if os.path.exists(f):
                a += ["--ro-bind", os.path.realpath(f), f]
        a += ["--ro-bind-data", str(fds.data(_PASSWD)), "/etc/passwd",
              "--ro-bind-data", str(fds.data(_GROUP)), "/etc/group",
              "--proc", "/proc", "--dev", "/dev",
              # tmpfs pages are not charged to RLIMIT_AS; cap them explicitly.
              "--size", str(limits.memory_bytes), "--tmpfs", "/tmp",
              "--size", str(limits.memory_bytes), "--tmpfs", "/dev/shm",
              # bwrap's /dev is an unbounded tmpfs the sandbox uid owns; freeze it.
              "--remount-ro", "/dev"]
        for src, dest in mounts:
            a += ["--ro-bind", src, dest]
        a += ["--bind", workdir_source, str(workdir),
              "--remount-ro", "/", "--chdir", str(workdir), "--", *argv]
        return a

    @contextmanager
    def _slot(self, per_run: bool) -> Iterator[_Slot | None]:
        """In root mode, hold a uid slot nobody else on this host holds (an flock) for the run."""
        if not per_run:
            yield None
            return
        _private_dir(self.lock_dir)
        start = random.randrange(self.uid_slots)
        for i in range(self.uid_slots):
            n = (start + i) % self.uid_slots
            fd = os.open(self.lock_dir / f"{n}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            slot = _Slot(self.uid_base + n, _private_dir(self.lock_dir / f"stage-{n}"))
            try:
                _kill_uid(slot.uid)  # leftovers of a worker that crashed mid-run
                yield slot
            finally:
                os.close(fd)
            return
        raise SandboxError("all sandbox uid slots are in use")


@dataclass(frozen=True)
class _Slot:
    uid: int
    stage: Path


class _FdSet:
    """Descriptors handed to bwrap; all closed when the run ends."""

    def __init__(self) -> None:
        self.passed: list[int] = []

    def __enter__(self) -> _FdSet:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.passed:
            with suppress(OSError):
                os.close(fd)

    def keep(self, fd: int) -> int:
        self.passed.append(fd)
        return fd

    def close(self, fd: int) -> None:
        """Close one of them now (it is then not closed again at the end)."""
        if fd in self.passed:
            self.passed.remove(fd)
            os.close(fd)

    def data(self, content: str | bytes) -> int:
        fd = os.memfd_create("bwrap-data")
        os.write(fd, content.encode() if isinstance(content, str) else content)
        os.lseek(fd, 0, os.SEEK_SET)
        return self.keep(fd)


class _NamespaceInit:
    """The run's PID-namespace init, held by a pidfd from the moment bwrap names it (--info-fd)
    so that killing it can never hit a recycled pid. Its death takes every process of the
    namespace with it: the kernel kills them all and reaps them before the init is reported
    exited, which is what `kill` waits for."""

    def __init__(self) -> None:
        self.pidfd: int | None = None

    def find(self, info_fd: int, *, bwrap_pid: int) -> None:
        data = b""
        deadline = time.monotonic() + _INIT_GONE_SECONDS
        while b"}" not in data and (left := deadline - time.monotonic()) > 0:
            if not select.select([info_fd], [], [], left)[0]:
                break
            chunk = os.read(info_fd, 256)
            if not chunk:  # bwrap died before it created the namespace
                break
            data += chunk
        found = re.search(rb'"child-pid":\s*(\d+)', data)
        if found is None:
            return
        pid = int(found.group(1))
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return
        # Still bwrap's child (bwrap, our unreaped child, never forks another): the pidfd is the init's.
        if _parent_of(pid) == bwrap_pid:
            self.pidfd = pidfd
        else:
            os.close(pidfd)

    def kill(self) -> None:
        if self.pidfd is None:
            return
        with suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        if not select.select([self.pidfd], [], [], _INIT_GONE_SECONDS)[0]:
            raise SandboxError("the sandbox's PID namespace survived SIGKILL")

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_line = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields resume after the last ')'.
    return int(stat_line[stat_line.rfind(b")") + 2:].split()[1])


_switch_probe: dict[int, bool] = {}
_probed: set[tuple[int, str, str, bool]] = set()
_warned: set[str] = set()


def _can_switch_to(uid: int) -> bool:
    """Whether a child of this process can become `uid` (root in a user namespace that does
    not map it cannot). Forked once per process and uid; the answer does not change."""
    if uid not in _switch_probe:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only makes system calls
            code = 1
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                code = 0
            finally:
                os._exit(code)
        _switch_probe[uid] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    return _switch_probe[uid]


def sandbox_environment(limits: Limits) -> dict[str, str]:
    """The command's whole environment. bwrap is started with exactly this one and passes it on: never
    `--setenv` on its command line, which every local user can read in /proc/<pid>/cmdline (the values
    may be keys). /proc/<pid>/environ is readable by the process's own uid alone."""
    return {**BASE_ENV, **limits.env}


def _warn_once(message: str) -> None:
    """The CLI's local runs go on where the Portal's would not; say once what they lack."""
    if message not in _warned:
        _warned.add(message)
        logger.warning("%s", message)


def _private_dir(path: Path) -> Path:
    """A root-owned directory others may traverse but not list or squat (it may sit in
    a world-writable /tmp, so an existing one must not be a link or someone else's)."""
    with suppress(FileExistsError):
        path.mkdir(mode=0o711)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise SandboxError(f"{path} must be a root-owned directory not writable by others")
    return path


def _prepare_stage(stage: Path, sources: list[Path]) -> list[str]:
    """Empty mount points, one per source. The binds onto them are made only inside the
    child's private mount namespace, so on the host these stay empty."""
    for entry in os.scandir(stage):
        (os.rmdir if entry.is_dir(follow_symlinks=False) else os.unlink)(entry.path)
    out = []
    for i, src in enumerate(sources):
        point = stage / str(i)
        if src.is_dir():
            point.mkdir(mode=0o755)
        else:
            point.touch(mode=0o644)
        out.append(str(point))
    return out


def _child_setup(
    rlimits: dict[int, tuple[int, int]], binds: list[tuple[str, str]], uid: int | None
) -> Callable[[], None]:
    """The preexec hook, run as root between fork and exec of bwrap.

    bwrap binds sources by path as the unprivileged sandbox uid, which cannot traverse a
    mode-700 parent such as /root (where pyenv's Python lives) or pytest's tmp dirs. So,
    still root, the child enters a private mount namespace and binds each source onto a
    world-traversable stage dir; bwrap binds from there. Then it lowers its rlimits and
    drops to the slot uid, so RLIMIT_NPROC is counted against that uid alone.
    """
    set_limits = rlimit_preexec(rlimits)
    encoded = [(src.encode(), dest.encode()) for src, dest in binds]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                           ctypes.c_ulong, ctypes.c_void_p]

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def setup() -> None:
        if encoded:
            check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
            check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
            for src, dest in encoded:
                check(libc.mount(src, dest, None, _MS_BIND | _MS_REC, None), "bind stage")
        set_limits()
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return setup


def _whole_run_watch(root_pid: list[int], workdir: Path, limits: Limits) -> Watch:
    """Limits that hold for the whole run, not per process (this machine has no cgroup v2).

    RLIMIT_AS bounds each process, RLIMIT_NPROC (on the run's own uid, or in its own user
    namespace) bounds the process count; this poll bounds what the run holds *together*: the
    resident memory of every process descending from bwrap (`root_pid[0]`, set once it
    started; orphans reparent to the PID namespace's init, so none escapes the tree) plus what
    its /tmp and /dev/shm tmpfs hold, and the bytes in the workdir. Between two polls a run can
    overshoot by what it allocates or writes in one poll interval (0.2 s), each process still
    within RLIMIT_AS and RLIMIT_FSIZE. Both modes read the same /proc files: the caller may
    read them for processes of its own uid, and in root mode it is root.
    """
    host_devs = {os.stat(p).st_dev for p in ("/tmp", "/dev/shm") if os.path.exists(p)}
    page = os.sysconf("SC_PAGE_SIZE")

    def check() -> tuple[str, str] | None:
        if root_pid:  # bwrap has started
            pids = _process_tree(root_pid[0])
            used, tmpfs_devs = 0, set[int]()
            for pid in pids:
                with suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{pid}/statm", "rb") as f:
                        used += int(f.read().split()[1]) * page
                # Every process inside shares one mount namespace: two tmpfs found, all found.
                for inside in ("tmp", "dev/shm") if len(tmpfs_devs) < 2 else ():
                    with suppress(OSError):
                        path = f"/proc/{pid}/root/{inside}"
                        dev = os.stat(path).st_dev
                        if dev not in host_devs and dev not in tmpfs_devs:
                            tmpfs_devs.add(dev)
                            vfs = os.statvfs(path)
                            used += (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize
            if used > limits.memory_bytes:
                return "memory", (f"killed: memory limit of {limits.memory_bytes} bytes for the whole run "
                                  f"exceeded ({used} bytes in {len(pids)} processes and tmpfs)")
        if limits.max_scratch_bytes is not None:
            used = disk_usage(workdir)
            if used > limits.max_scratch_bytes:
                return "scratch_disk", (f"killed: scratch disk limit of {limits.max_scratch_bytes} bytes "
                                        f"exceeded ({used} bytes written)")
        return None

    return check


def _process_tree(root: int) -> list[int]:
    """`root` and all its descendants (from /proc/<pid>/task/<tid>/children)."""
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        with suppress(OSError, ValueError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    stack.extend(int(child) for child in f.read().split())
    return out


def _rlimits(limits: Limits) -> dict[int, tuple[int, int]]:
    """The per-process limits bwrap and all below it inherit (RLIMIT_NPROC is the mode's)."""
    return {
        # The soft limit sends SIGXCPU; the hard one a second later SIGKILLs a process
        # that ignores it.
        resource.RLIMIT_CPU: (limits.cpu_seconds, limits.cpu_seconds + 1),
        resource.RLIMIT_AS: (limits.memory_bytes, limits.memory_bytes),
        resource.RLIMIT_FSIZE: (limits.max_file_bytes, limits.max_file_bytes),
        resource.RLIMIT_CORE: (0, 0),
    }


def _nproc(count: int) -> tuple[int, int]:
    return count, count


def _check_readable(src: Path, *, world: bool) -> None:
    """`world`: the sandbox reads as a uid of its own (root mode), so others must be allowed to read."""
    st = os.stat(src)
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else 0)
    readable = (st.st_mode & need) == need if world else os.access(src, os.R_OK)
    if not readable:
        raise MountError(
            f"read-only mount {src} is not readable by the sandbox user "
            "(make it world-readable: o+r, and o+x on directories)"
        )


def _uids_pids(uid: int, *, include_zombies: bool = False) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                fields = dict(line.split(b":", 1) for line in f if b":" in line)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        zombie = fields.get(b"State", b"").strip().startswith(b"Z")
        if int(fields.get(b"Uid", b"-1 ").split()[0]) == uid and (include_zombies or not zombie):
            pids.append(int(entry.name))
    return pids


def _count_processes(uid: int) -> int:
    return len(_uids_pids(uid, include_zombies=True))


def _kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every host process of a dedicated sandbox uid until none is left.

    Zombies are skipped: bwrap's outer process exits without reaping its PID-namespace
    init, which is then reparented to PID 1 and reaped there (within seconds here)."""
    for _ in range(rounds):
        pids = _uids_pids(uid)
        if not pids:
            return
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    raise SandboxError(f"processes of sandbox uid {uid} survive SIGKILL")


def _decode_exit(code: int) -> int:
    # bwrap reports a signal death as 128 + signo; undo it so callers see -signo like
    # subprocess. A command that itself exits with such a code is indistinguishable.
    if 128 < code < 128 + signal.NSIG:
        return -(code - 128)
    return code
