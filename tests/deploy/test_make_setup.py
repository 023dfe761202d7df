"""What `make` checks before it installs anything: the Python it builds .venv with (scripts/find-python.sh,
scripts/ensure-venv.sh) and the Debian packages `make run` and `make test` each need
(scripts/ensure-system-packages.sh). Each test runs the real Makefile and scripts, on a copy of them in a
temporary directory, with a PATH made of only the tools named (fake interpreters are small scripts that
answer the version probe)."""

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import REPO

# requires-python is ">=3.X,<3.Y": the pinned requirements have wheels for 3.X to 3.Y-1.
MINIMUM, BELOW = (part.lstrip("<>=") for part in
                  tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"].split(","))
NEWEST = f"3.{int(BELOW.split('.')[1]) - 1}"
WANTED = f"Python {MINIMUM} to {NEWEST}"
# What the scripts and make run besides the interpreters (bash finds the rest through the PATH).
SHELL_TOOLS = ("bash", "sh", "env", "make", "sed", "sort", "head", "timeout", "readlink", "mktemp", "cat", "rm",
               "cut", "paste", "id", "dirname", "ls")
NOBODY = 65534


@pytest.fixture
def checkout() -> Iterator[Path]:
    """A copy of what `make` reads before installing: Makefile, pyproject.toml, scripts/. World-readable,
    for the tests that run as an ordinary user."""
    root = Path(tempfile.mkdtemp(prefix="asibench-make-", dir="/tmp"))
    try:
        for name in ("Makefile", "pyproject.toml"):
            shutil.copy2(REPO / name, root / name)
        shutil.copytree(REPO / "scripts", root / "scripts")
        for path in (root, *root.rglob("*")):
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
        yield root
    finally:
        shutil.rmtree(root)


def tools(directory: Path, names: tuple[str, ...] = SHELL_TOOLS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        found = shutil.which(name)
        assert found, f"this test needs {name} on the PATH"
        (directory / name).symlink_to(found)
    return directory


def fake_python(path: Path, version: str) -> Path:
    """Answers the version probe (`%d.%d.%d <sys.executable>`) as an interpreter of `version` would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "{version} {path}"\n')
    path.chmod(0o755)
    return path


def run(argv: list[str], cwd: Path, path: list[Path], user: int | None = None,
        **env: str) -> subprocess.CompletedProcess:
    prefix = [] if user is None else [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}",
                                      "--clear-groups"]
    return subprocess.run([*prefix, *argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": ":".join(map(str, path)), "HOME": str(cwd), **env})


def only_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


# --- the interpreter ---------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["run", "test", "deps"])
def test_make_refuses_a_python_older_than_supported_before_installing_anything(checkout: Path, target: str) -> None:
    old = fake_python(checkout / "old" / "python3", "3.10.12")
    done = run(["make", target, f"PYTHON={old}"], checkout, [tools(checkout / "bin")])
    assert done.returncode != 0
    assert f"PYTHON={old} is Python 3.10.12; ASI-Bench needs {WANTED}." in done.stderr
    assert f"sudo apt-get install -y python{MINIMUM} python{MINIMUM}-venv" in done.stderr
    assert not (checkout / ".venv").exists() and not (checkout / "var").exists()
    assert "Installing" not in done.stdout + done.stderr and "Creating" not in done.stdout


def test_without_python_make_says_which_it_found_and_what_to_install(checkout: Path) -> None:
    fake_python(checkout / "a" / "python3", "3.10.12")
    fake_python(checkout / "b" / "python3.9", "3.9.2")
    fake_python(checkout / "b" / f"python{BELOW}", f"{BELOW}.0")  # too new: the pinned wheels stop before it
    done = run(["make", "run"], checkout, [tools(checkout / "bin"), checkout / "a", checkout / "b"])
    assert done.returncode != 0
    assert (f"ASI-Bench needs {WANTED} and the PATH has only 3.9.2 ({checkout}/b/python3.9), "
            f"3.10.12 ({checkout}/a/python3), {BELOW}.0 ({checkout}/b/python{BELOW}).") in done.stderr
    assert not (checkout / ".venv").exists()


def test_a_named_python_newer_than_supported_is_refused(checkout: Path) -> None:
    new = fake_python(checkout / "new" / f"python{BELOW}", f"{BELOW}.1")
    done = run(["make", "run", f"PYTHON={new}"], checkout, [tools(checkout / "bin")])
    assert done.returncode != 0
    assert f"PYTHON={new} is Python {BELOW}.1; ASI-Bench needs {WANTED}." in done.stderr
    assert not (checkout / ".venv").exists()


def test_a_python_that_is_not_there_or_does_not_run_is_named(checkout: Path) -> None:
    bin_dir = tools(checkout / "bin")
    done = run(["make", "run", "PYTHON=python3.99"], checkout, [bin_dir])
    assert "PYTHON=python3.99: no such command." in done.stderr and done.returncode != 0
    broken = checkout / "broken" / "python3"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    done = run(["make", "run", f"PYTHON={broken}"], checkout, [bin_dir])
    assert f"PYTHON={broken} ({broken}) does not run as a Python interpreter." in done.stderr
    assert not (checkout / ".venv").exists()


def test_the_oldest_supported_python_on_the_path_is_chosen(checkout: Path) -> None:
    bin_dir = tools(checkout / "bin")
    fake_python(checkout / "new" / "python3", "3.13.1")
    fake_python(checkout / "new" / "python3.10", "3.10.14")  # older, but not supported
    oldest = fake_python(checkout / "sys" / "python3.11", "3.11.2")
    fake_python(checkout / "later" / "python3", "3.11.2")  # the same version later on the PATH: not chosen
    fake_python(checkout / "pyenv" / "python3.11", "3.11.7")
    (checkout / "junk").mkdir()
    (checkout / "junk" / "python3.11-config").symlink_to(oldest)  # not an interpreter's name
    done = run(["bash", "scripts/find-python.sh"], checkout,
               [bin_dir, checkout / "new", checkout / "pyenv", checkout / "sys", checkout / "later", checkout / "junk"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{oldest}\n"


def test_a_named_supported_python_is_taken_as_it_is(checkout: Path) -> None:
    newer = fake_python(checkout / "opt" / "python3.12", "3.12.3")
    fake_python(checkout / "sys" / "python3", "3.11.2")
    done = run(["bash", "scripts/find-python.sh"], checkout, [tools(checkout / "bin"), checkout / "sys"],
               PYTHON=str(newer))
    assert (done.returncode, done.stdout) == (0, f"{newer}\n"), done.stderr


def test_the_real_interpreter_running_the_tests_is_supported(checkout: Path) -> None:
    # The suite runs in the .venv `make` built; its interpreter must pass the Makefile's own check.
    done = run(["bash", "scripts/find-python.sh"], checkout, [tools(checkout / "bin")], PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == Path(sys.executable).resolve()


@pytest.mark.slow  # makes a real venv and upgrades its pip
def test_a_venv_made_with_another_interpreter_is_rebuilt_with_the_chosen_one(checkout: Path) -> None:
    chosen = Path(sys._base_executable).resolve()
    stale = checkout / ".venv" / "bin"
    stale.mkdir(parents=True)
    (stale / "python").symlink_to(shutil.which("sh") or "/bin/sh")
    (stale / "pip").write_text("#!/bin/sh\n")
    path = [Path("/usr/bin"), Path("/bin")]
    done = run(["bash", "scripts/ensure-venv.sh", str(chosen)], checkout, path)
    assert done.returncode == 0, done.stderr
    made_with = Path(shutil.which("sh") or "/bin/sh").resolve()
    assert done.stdout.splitlines()[0] == (f".venv was made with {made_with}; rebuilding it with {chosen} "
                                           f"(Python {sys.version.split()[0]}).")
    assert (checkout / ".venv" / "bin" / "python").resolve() == chosen
    assert (checkout / ".venv" / "bin" / "pip").exists()
    again = run(["bash", "scripts/ensure-venv.sh", str(chosen)], checkout, path)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


# --- the Debian packages -----------------------------------------------------------------------------

def packages(checkout: Path, target: str, path: list[Path], python: str = "/usr/bin/python3",
             **env: str) -> subprocess.CompletedProcess:
    """scripts/ensure-system-packages.sh as an ordinary user (as root it would install what is missing)."""
    return run(["bash", "scripts/ensure-system-packages.sh", target], checkout, path, user=NOBODY,
               PYTHON=python, **env)


def test_make_run_does_not_need_the_test_tools(checkout: Path) -> None:
    # An ordinary user with bubblewrap and nothing else: no Chromium, Redis or iproute2 on the PATH.
    bin_dir = tools(checkout / "bin", (*SHELL_TOOLS, "bwrap"))
    done = packages(checkout, "run", [bin_dir])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    done = packages(checkout, "test", [bin_dir])
    assert done.returncode == 1
    missing = ["iproute2", *(["postgresql"] if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) else []),
               "redis-server", "chromium"]
    assert only_line(done.stderr) == (f"make test needs these Debian packages: {' '.join(missing)}. "
                                      f"Install them with: sudo apt-get install -y {' '.join(missing)}")
    without_browser = packages(checkout, "test", [bin_dir], ASIBENCH_SKIP_BROWSER="1")
    assert "chromium" not in without_browser.stderr and "redis-server" in without_browser.stderr


def test_make_run_without_bubblewrap_says_the_one_install_command(checkout: Path) -> None:
    done = packages(checkout, "run", [tools(checkout / "bin")])
    assert done.returncode == 1
    assert only_line(done.stderr) == ("make run needs these Debian packages: bubblewrap. "
                                      "Install them with: sudo apt-get install -y bubblewrap")


def test_all_test_tools_present_is_quiet(checkout: Path) -> None:
    bin_dir = tools(checkout / "bin", (*SHELL_TOOLS, "bwrap", "ip", "redis-server", "chromium"))
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.fail("this machine is set up for `make test`: PostgreSQL must be installed")
    done = packages(checkout, "test", [bin_dir])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_debians_python_without_its_venv_package_is_named(checkout: Path) -> None:
    # Debian's python3 keeps ensurepip in python3.N-venv: without it `python3 -m venv` leaves a venv
    # with no pip. A real /usr/bin/python3 whose ensurepip cannot be imported stands for that Python.
    if not Path("/usr/bin/python3").exists():
        pytest.fail("this test needs Debian's /usr/bin/python3")
    hide = checkout / "no-ensurepip"
    hide.mkdir()
    (hide / "ensurepip.py").write_text("raise ImportError('python3-venv is not installed')\n")
    wrapper = hide / "python3"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={hide} exec /usr/bin/python3 "$@"\n')
    for path in (hide, hide / "ensurepip.py"):
        path.chmod(0o755)
    wrapper.chmod(0o755)
    series = subprocess.run(["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    done = packages(checkout, "run", [tools(checkout / "bin", (*SHELL_TOOLS, "bwrap"))], python=str(wrapper))
    assert done.returncode == 1
    assert only_line(done.stderr) == (f"make run needs these Debian packages: python{series}-venv. "
                                      f"Install them with: sudo apt-get install -y python{series}-venv")
