"""The default backend: bubblewrap namespaces plus rlimits, run under a throwaway host uid.

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
- The command runs as uid/gid 65534 inside. When the caller is root (the service), that
  id maps to a host uid/gid of its own, `uid_base + slot`, with the slot held by an flock
  for the run; so the kernel's per-user RLIMIT_NPROC counts this sandbox alone and holds
  against a fork bomb, and every leftover process can be found and killed by uid.
  `workdir` is chowned to that uid for the run and back to its owner afterwards (the whole
  tree, to the workdir's owner). When the caller is not root (the CLI's linux_ns mode), it
  maps to the caller's uid, the process cap counts the caller's other processes too, and
  the whole-run memory cap is off: the Portal refuses such a run (`unenforced_limits`), the
  CLI warns and goes on.
- RLIMIT_CPU (SIGXCPU, SIGKILL one second later), RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE and
  RLIMIT_CORE=0 are set in the preexec hook and inherited by bwrap and all below it.
- Whole-run limits without cgroup v2 (this code does not use cgroups): RLIMIT_NPROC on the
  run's own uid caps the process count of the whole run; a poll every 0.2 s sums the
  resident memory of the run's process tree plus its /tmp and /dev/shm tmpfs against
  `memory_bytes`, and the workdir's bytes against `max_scratch_bytes`, and kills the run
  when either is exceeded (see `_whole_run_watch`).
- Whatever the command leaves in `workdir` is hostile: host code reads it only through
  `scoring.sandbox.outputs` (no link following, no special files).
- Read-only mounts must be world-readable (o+r, o+x on directories): they are read as an
  unprivileged uid. Their parents need not be (see `_child_setup`).

The preexec hook runs Python between fork and exec; it only makes system calls, which is
safe in the prefork Celery worker and the CLI, both single-threaded when they call `run`.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import random
import resource
import shutil
import signal
import stat
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
from .process import Watch, disk_usage, drive, rlimit_preexec, workdir_owned_by
from .seccomp import filter_program

logger = logging.getLogger(__name__)

INSIDE_ID = 65534
DEFAULT_UID_BASE = 1_900_000_000
DEFAULT_UID_SLOTS = 4096
# bwrap's own processes (the outer monitor and the PID-namespace init) run under the same
# uid and count against RLIMIT_NPROC.
BWRAP_OVERHEAD_PROCESSES = 2

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
    ) -> None:
        found = bwrap or shutil.which("bwrap")
        if not found or not os.access(found, os.X_OK):
            raise BackendUnavailable("bubblewrap (bwrap) is not installed")
        self.bwrap = found
        self.uid_base = uid_base
        self.uid_slots = uid_slots
        self.lock_dir = lock_dir or Path(tempfile.gettempdir()) / "asibench-sandbox"
        self.seccomp_filter = filter_program()

    def unenforced_limits(self) -> str | None:
        if os.geteuid() != 0:
            why = f"it runs as uid {os.geteuid()}, not root"
        elif not _can_switch_to(self.uid_base):
            why = f"root here cannot switch to the per-run uids (from {self.uid_base}; a user namespace without them?)"
        else:
            return None
        return (f"the bwrap sandbox cannot enforce the whole-run memory and process limits: {why}. "
                "Run the worker as root, or use the docker backend (ASIBENCH_SANDBOX=docker).")

    def run(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
    ) -> SandboxResult:
        workdir = checked_run_args(argv, workdir)
        mounts = normalize_mounts(read_only_mounts)
        as_root = os.geteuid() == 0
        for src, _ in mounts:
            _check_readable(src, as_root=as_root)

        with self._slot(as_root) as slot, _FdSet() as fds:
            binds = [*mounts, (workdir, str(workdir))]
            if slot is None:
                _warn_unenforced(self)
                # Not root: bwrap binds the real paths, which the caller can reach.
                sources = [str(src) for src, _ in binds]
                host_uid, nproc = os.getuid(), _count_processes(os.getuid())
            else:
                sources = _prepare_stage(slot.stage, [src for src, _ in binds])
                host_uid, nproc = slot.uid, 0
            # The calling uid's other processes count too when not root; then this cap is
            # approximate. bwrap's own processes always count.
            nproc += limits.max_processes + BWRAP_OVERHEAD_PROCESSES
            block_r, block_w = os.pipe()
            fds.keep(block_r)
            os.write(block_w, b"x")
            os.close(block_w)
            ro = [(source, dest) for source, (_, dest) in zip(sources, mounts, strict=False)]
            args = self.command(argv, workdir, ro, sources[-1], limits, fds)
            args[1:1] = ["--block-fd", str(block_r)]
            stage_binds = [(str(src), stage) for (src, _), stage in
                           zip(binds, sources, strict=True)] if slot else []
            started: list[int] = []  # bwrap's pid, the root of every process of the run
            with workdir_owned_by(workdir, host_uid if slot else None) as handback:
                done = drive(
                    args,
                    cwd=Path("/"),
                    env=sandbox_environment(limits),
                    timeout=limits.wall_clock_seconds,
                    output_cap=limits.max_output_bytes,
                    pass_fds=fds.passed,
                    preexec_fn=_child_setup(_rlimits(limits, nproc), stage_binds,
                                            slot.uid if slot else None),
                    on_started=started.append,
                    watch=_whole_run_watch(started if slot else None, workdir, limits),
                )
                if slot:
                    _kill_uid(slot.uid)
            # bwrap reads the byte only after every mount and the pivot succeeded; if it is
            # still in the pipe, bwrap died setting up and the command never ran.
            os.set_blocking(block_r, False)
            try:
                setup_failed = os.read(block_r, 1) == b"x"
            except BlockingIOError:
                setup_failed = False

        stderr = done.stderr.getvalue()
        if setup_failed and not done.timed_out:
            raise SandboxError(f"bwrap could not set up the sandbox: {stderr[-2000:]!r}")
        returncode = _decode_exit(done.returncode)
        limit, reason = done.stopped or classify(returncode, stderr, done.timed_out, limits)
        if handback:
            limit, reason = "workdir", handback[0]
        return SandboxResult(
            returncode=returncode,
            stdout=done.stdout.getvalue(),
            stderr=stderr,
            timed_out=done.timed_out,
            duration_seconds=done.duration_seconds,
            backend=self.name,
            reason=reason,
            limit=limit,
            stdout_truncated=done.stdout.truncated,
            stderr_truncated=done.stderr.truncated,
        )

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
    def _slot(self, as_root: bool) -> Iterator[_Slot | None]:
        """As root, hold a uid slot nobody else on this host holds (an flock) for the run."""
        if not as_root:
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

    def data(self, content: str | bytes) -> int:
        fd = os.memfd_create("bwrap-data")
        os.write(fd, content.encode() if isinstance(content, str) else content)
        os.lseek(fd, 0, os.SEEK_SET)
        return self.keep(fd)


_switch_probe: dict[int, bool] = {}
_warned = False


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


def _warn_unenforced(backend: BwrapBackend) -> None:
    """The CLI's local runs go on without root; say once what they lack."""
    global _warned
    if not _warned and (problem := backend.unenforced_limits()):
        _warned = True
        logger.warning("%s (running anyway: a local run)", problem)


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


def _whole_run_watch(root_pid: list[int] | None, workdir: Path, limits: Limits) -> Watch | None:
    """Limits that hold for the whole run, not per process (this machine has no cgroup v2).

    RLIMIT_AS bounds each process, RLIMIT_NPROC on the run's own uid bounds the process
    count; this poll bounds what the run holds *together*: the resident memory of every
    process descending from bwrap (`root_pid[0]`, set once it started; orphans reparent to
    the PID namespace's init, so none escapes the tree) plus what its /tmp and /dev/shm tmpfs
    hold, and the bytes in the workdir. Between two polls a run can overshoot by what it
    allocates or writes in one poll interval (0.2 s), each process still within RLIMIT_AS
    and RLIMIT_FSIZE. `root_pid` None: the workdir cap only (the CLI's unprivileged mode).
    """
    if root_pid is None and limits.max_scratch_bytes is None:
        return None
    host_devs = {os.stat(p).st_dev for p in ("/tmp", "/dev/shm") if os.path.exists(p)}
    page = os.sysconf("SC_PAGE_SIZE")

    def check() -> tuple[str, str] | None:
        if root_pid:
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


def _rlimits(limits: Limits, nproc: int) -> dict[int, tuple[int, int]]:
    return {
        # The soft limit sends SIGXCPU; the hard one a second later SIGKILLs a process
        # that ignores it.
        resource.RLIMIT_CPU: (limits.cpu_seconds, limits.cpu_seconds + 1),
        resource.RLIMIT_AS: (limits.memory_bytes, limits.memory_bytes),
        resource.RLIMIT_NPROC: (nproc, nproc),
        resource.RLIMIT_FSIZE: (limits.max_file_bytes, limits.max_file_bytes),
        resource.RLIMIT_CORE: (0, 0),
    }


def _check_readable(src: Path, *, as_root: bool) -> None:
    st = os.stat(src)
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else 0)
    readable = (st.st_mode & need) == need if as_root else os.access(src, os.R_OK)
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
