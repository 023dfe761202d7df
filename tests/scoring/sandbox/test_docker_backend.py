"""The docker backend against a real engine: podman serving the Docker API on DOCKER_HOST
(`make test` starts it and builds the scoring image: scripts/ensure-container-engine.sh).

These tests never skip: an unreachable engine is a failure of the test setup.
"""

import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from scoring.sandbox import BackendUnavailable, Limits, MountError, SandboxError, get_backend
from scoring.sandbox.docker_backend import CONTAINER_UID, DockerBackend

pytestmark = pytest.mark.slow

LABEL = "org.asibench.sandbox"


@pytest.fixture
def docker() -> DockerBackend:
    backend = get_backend("docker")
    assert isinstance(backend, DockerBackend)
    return backend


@pytest.fixture
def limits() -> Limits:
    # A caller's PYTHONPATH names host paths; the backend must drop it, not hide the image's code.
    return Limits(wall_clock_seconds=60, cpu_seconds=30, memory_bytes=256 << 20, max_processes=32,
                  max_file_bytes=8 << 20, env={"PYTHONPATH": "/nonexistent/host/project", "TASK": "t1"})


def py(code: str) -> list[str]:
    return ["python", "-c", code]


def sandbox_containers(docker: DockerBackend, marker: str) -> list[str]:
    """Sandbox containers (running or stopped) whose command contains `marker`."""
    listed = docker._connect().containers.list(all=True, sparse=True, filters={"label": LABEL})
    return [c.id for c in listed if marker in str(c.attrs.get("Command"))]


def test_it_scores_with_the_images_python_numpy_and_scoring_code(docker, workdir, limits):
    code = ("import os, numpy, scoring.engine, cli_client.authoring.presubmit;"
            "print(os.getcwd(), numpy.arange(4).sum(), os.environ['TASK'], os.environ.get('PYTHONPATH'));"
            "open('out.txt', 'w').write('written inside')")
    result = docker.run(py(code), workdir, [], limits)

    assert result.ok, result.stderr_text
    assert result.stdout_text.split() == [str(workdir), "6", "t1", "None"]
    assert result.backend == "docker" and result.limit is None
    assert (workdir / "out.txt").read_text() == "written inside"
    # The workdir is lent to uid 65534 for the run and handed back to its owner.
    assert (workdir / "out.txt").stat().st_uid == workdir.stat().st_uid == os.getuid()


def test_the_image_carries_bytecode_for_its_read_only_root(docker, workdir, limits):
    code = ("import os, numpy, scipy, scoring.engine as e;"
            "print(all(os.path.exists(m.__cached__) for m in (numpy, scipy, e)))")
    result = docker.run(py(code), workdir, [], limits)
    assert result.stdout_text.split() == ["True"], result.stderr_text


def test_the_image_has_the_same_versions_as_the_service_venv(docker, workdir, limits):
    """Task code must score the same in either backend: every distribution the image carries
    (transitive ones included, e.g. python-dateutil under pandas) is the version the venv has."""
    import importlib.metadata as metadata
    import json

    code = ("import json, importlib.metadata as m;"
            "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))")
    result = docker.run(py(code), workdir, [], limits)
    assert result.ok, result.stderr_text
    in_image = json.loads(result.stdout_text)
    in_venv = {d.metadata["Name"].lower(): d.version for d in metadata.distributions()}
    shared = set(in_image) & set(in_venv) - {"pip", "setuptools", "wheel"}
    assert {"numpy", "pandas", "python-dateutil", "six"} <= shared
    assert {n: (in_image[n], in_venv[n]) for n in shared if in_image[n] != in_venv[n]} == {}


def test_pid_1_reaps_orphans_and_lends_its_stdout_to_nobody(docker, workdir, limits):
    # 100 orphans under a pids limit of 32: only an init that reaps them lets the loop finish.
    code = ("import os, subprocess\n"
            "for _ in range(100):\n"
            "    subprocess.run(['sh', '-c', 'true & exit 0'], check=True)\n"
            "try:\n"
            "    os.open('/proc/1/fd/1', os.O_WRONLY)\n"
            "    print('opened')\n"
            "except OSError as exc:\n"
            "    print('refused', exc.errno)\n")
    result = docker.run(py(code), workdir, [], limits)
    assert result.ok, result.stderr_text
    assert result.stdout_text.split() == ["refused", "13"]


def test_it_runs_as_nobody_with_no_capabilities(docker, workdir, limits):
    result = docker.run(["sh", "-c", "id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status;"
                         "grep NoNewPrivs /proc/self/status"], workdir, [], limits)
    lines = result.stdout_text.split("\n")
    assert lines[:2] == [str(CONTAINER_UID), str(CONTAINER_UID)], result.stderr_text
    caps = dict(line.split(":\t") for line in lines[2:5])
    assert caps == {"CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapBnd": "0000000000000000"}
    assert lines[5].split() == ["NoNewPrivs:", "1"]


def test_it_has_no_network(docker, workdir, limits):
    code = ("import socket, os\n"
            "print(sorted(os.listdir('/sys/class/net')))\n"
            "s = socket.socket(); s.settimeout(3)\n"
            "try:\n  s.connect(('10.0.2.2', 53)); print('connected')\n"
            "except OSError as e:\n  print('refused', e.errno)\n")
    result = docker.run(py(code), workdir, [], limits)
    assert result.ok, result.stderr_text
    interfaces, outcome = result.stdout_text.splitlines()
    assert interfaces == "['lo']"
    assert outcome.startswith("refused")


def test_network_is_given_only_when_asked_for(docker, workdir, limits):
    """`asibench run --sandbox os --network bridge`: the engine's NAT, so a model provider is reachable."""
    result = docker.run(["ls", "/sys/class/net"], workdir, [], limits.replace(network=True))
    assert result.ok, result.stderr_text
    assert "lo" in result.stdout_text.split() and len(result.stdout_text.split()) > 1


def test_the_root_and_the_mounts_are_read_only(docker, workdir, limits, tmp_path):
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "answer.txt").write_text("42")
    os.chmod(reference, 0o755)
    code = ("import errno\n"
            "print(open('/ref/answer.txt').read())\n"
            "for path in ('/usr/evil', '/ref/evil', '/opt/asibench/scoring/evil', '/etc/evil'):\n"
            "  try:\n    open(path, 'w'); print('wrote', path)\n"
            "  except OSError as e:\n    print(errno.errorcode[e.errno])\n")
    result = docker.run(py(code), workdir, [(reference, "/ref")], limits)
    assert result.ok, result.stderr_text
    answer, *outcomes = result.stdout_text.split()
    assert answer == "42"
    assert all(o in ("EROFS", "EACCES") for o in outcomes), outcomes
    assert sorted(p.name for p in reference.iterdir()) == ["answer.txt"]


def test_only_the_given_mounts_are_visible(docker, workdir, limits, tmp_path):
    """Scoring mounts one instance's reference; its siblings (other instances) stay unseen."""
    private = tmp_path / "private"
    mine, other = private / "inst-a" / "reference", private / "inst-b" / "reference"
    for ref, text in ((mine, "mine"), (other, "secret")):
        ref.mkdir(parents=True)
        (ref / "truth.txt").write_text(text)
    code = (f"import os; print(open('{mine}/truth.txt').read());"
            f"print(os.path.exists('{other}'), sorted(os.listdir('{private}')), os.path.exists('{tmp_path}/work/..'))")
    result = docker.run(py(code), workdir, [mine], limits)
    assert result.ok, result.stderr_text
    assert result.stdout_text.split("\n")[:2] == ["mine", "False ['inst-a'] True"]


def test_the_process_limit_holds(docker, workdir, limits):
    code = ("import subprocess, sys\n"
            "procs = []\n"
            "try:\n"
            "  for _ in range(200):\n"
            "    procs.append(subprocess.Popen(['sleep', '30']))\n"
            "except OSError as e:\n  print('stopped at', len(procs), e.strerror)\n"
            "else:\n  print('started', len(procs))\n"
            "for p in procs: p.kill()\n")
    result = docker.run(py(code), workdir, [], limits.replace(max_processes=16))
    words = result.stdout_text.split()
    assert words[:2] == ["stopped", "at"], (result.stdout_text, result.stderr_text)
    assert int(words[2]) < 16


def test_the_memory_limit_kills_and_is_named(docker, workdir, limits):
    # Touch every page so the memory cgroup (not an address-space rlimit) has to act.
    code = "b = bytearray(512 << 20); print('survived', len(b))"
    result = docker.run(py(code), workdir, [], limits.replace(memory_bytes=128 << 20))
    assert "survived" not in result.stdout_text
    assert result.limit == "memory", (result.returncode, result.reason, result.stderr_text)
    assert not result.timed_out and "memory limit" in (result.reason or "")


def test_a_command_past_its_time_is_killed_and_removed(docker, workdir, limits):
    marker = f"timeout-{uuid.uuid4().hex[:8]}"
    result = docker.run(["sh", "-c", f"echo {marker}; sleep 600"], workdir, [], limits.replace(wall_clock_seconds=3))
    assert result.timed_out and result.limit == "wall_clock"
    assert 3 <= result.duration_seconds < 30
    assert marker in result.stdout_text  # output up to the kill is kept
    assert sandbox_containers(docker, marker) == []  # nothing left running or stopped


def test_every_run_removes_its_container(docker, workdir, limits):
    marker = f"removed-{uuid.uuid4().hex[:8]}"
    assert docker.run(["sh", "-c", f"true {marker}"], workdir, [], limits).ok
    assert docker.run(["sh", "-c", f"false {marker}"], workdir, [], limits).returncode == 1
    # While it runs, the container is listed by its command (so the lookup can see one); then it is gone.
    runner = threading.Thread(target=docker.run, args=(["sh", "-c", f"sleep 4; true {marker}"], workdir, [], limits))
    runner.start()
    deadline, listed = time.monotonic() + 30, []
    while not listed and time.monotonic() < deadline:
        listed = sandbox_containers(docker, marker)
        time.sleep(0.2)
    runner.join()
    assert len(listed) == 1
    assert sandbox_containers(docker, marker) == []


def test_a_missing_workdir_or_mount_is_refused_before_any_container(docker, tmp_path, limits):
    with pytest.raises(MountError):
        docker.run(["true"], tmp_path / "absent", [], limits)
    work = tmp_path / "w"
    work.mkdir()
    with pytest.raises(MountError):
        docker.run(["true"], work, [Path("/nonexistent/reference")], limits)


def test_a_missing_image_is_a_sandbox_error_that_names_it(workdir, limits):
    with pytest.raises(SandboxError, match="asibench-no-such-image:1"):
        DockerBackend(image="asibench-no-such-image:1").run(["true"], workdir, [], limits)


def test_an_unreachable_engine_is_reported_as_unavailable(workdir, limits, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(BackendUnavailable, match="unreachable at unix:.*no-engine.sock"):
        DockerBackend().run(["true"], workdir, [], limits)


def test_filling_the_scratch_dir_past_its_cap_stops_the_container(docker, workdir, limits):
    # Each file is under the per-file limit (8 MiB); together they pass the 48 MiB scratch cap.
    capped = limits.replace(max_scratch_bytes=48 << 20, wall_clock_seconds=40)
    code = ("import time\n"
            "for i in range(40):\n"
            "    open(f'f{i}.bin', 'wb').write(b'x' * (4 << 20)); time.sleep(0.05)\n"
            "print('wrote everything')")
    result = docker.run(py(code), workdir, [], capped)

    assert result.limit == "scratch_disk", (result.reason, result.stderr_text[-500:])
    assert "scratch disk limit of 50331648 bytes" in result.reason
    assert "wrote everything" not in result.stdout_text and not result.ok


FLOOD = ("import sys\n"
         "print('first')\n"
         "sys.stderr.write('err-first\\n'); sys.stderr.flush()\n"
         "for i in range(40000): print('x' * 60)\n"
         "sys.stderr.write('err-last\\n')\n"
         "print('last-line')\n"
         "sys.exit(3)\n")


def test_both_streams_arrive_whole_or_capped_with_their_exit_code(docker, workdir, limits):
    """The run's end is its attached stream's end: everything written before the exit is there."""
    result = docker.run(py(FLOOD), workdir, [], limits.replace(max_output_bytes=256 << 10))
    assert result.returncode == 3
    lines = result.stdout_text.splitlines()
    assert lines[0] == "first" and lines[-1] == "last-line"  # head and tail kept
    assert "bytes omitted" in result.stdout_text  # 2.4 MB capped at 256 KiB
    assert result.stderr_text.split() == ["err-first", "err-last"]


def test_an_attach_stream_the_engine_drops_early_loses_no_output(docker, workdir, limits, monkeypatch):
    """An engine that ends the attached stream while the container still runs: the run waits for the
    container and takes the output the engine kept, not the part the stream carried."""
    from docker.models.containers import Container

    real_attach = Container.attach

    def cut_after_first_frame(self, **kwargs):
        stream = real_attach(self, **kwargs)
        yield next(stream)

    monkeypatch.setattr(Container, "attach", cut_after_first_frame)
    code = "import time; print('before', flush=True); time.sleep(2); print('after'); raise SystemExit(5)"
    result = docker.run(py(code), workdir, [], limits)
    assert result.returncode == 5 and not result.timed_out
    assert result.stdout_text.split() == ["before", "after"]


def test_backends_of_one_process_share_one_engine_client_and_a_forked_worker_gets_its_own(docker, workdir, limits):
    """A worker takes a backend per task; asking podman for its version anew each time cost ~0.2 s."""
    client = docker._connect()
    assert DockerBackend()._connect() is client
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # Celery's prefork pool: the child must not use the parent's connections
        try:
            child = DockerBackend()
            answer = child._connect() is not client and child.run(["true"], workdir, [], limits).ok
            os.write(write_end, b"1" if answer else b"0")
        finally:
            os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"1"
    os.waitpid(pid, 0)
    assert docker.run(["true"], workdir, [], limits).ok  # and the parent's client still works
