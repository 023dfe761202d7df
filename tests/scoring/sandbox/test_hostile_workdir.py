"""What sandboxed code leaves in (or swaps into) its workdir while the host measures it, takes it
back and removes it: nothing there may steer the host's walks, and nothing there is the host's error."""

import os
import resource
import sys
from pathlib import Path

import pytest

from scoring.sandbox.process import disk_usage, scratch_tree, tree_remove

PY = sys.executable
BIG_HOST_DIR = sys.prefix  # the checkout's virtualenv: hundreds of MB on the host

pytestmark = pytest.mark.slow

# Swap eight directories for links to a big host directory and back, for four seconds, each
# state held about as long as the other; a thousand files beside them widen the host's window
# between seeing a directory and opening it.
SWAPPER = f"""
import os, time
os.mkdir('s')
for i in range(1000):
    open(f's/f{{i}}', 'w').close()
for i in range(8):
    os.makedirs(f's/d{{i}}/x')
end = time.time() + 4
while time.time() < end:
    for i in range(8):
        os.rename(f's/d{{i}}', f's/h{{i}}')
        os.symlink({BIG_HOST_DIR!r}, f's/d{{i}}')
    time.sleep(0.002)
    for i in range(8):
        os.unlink(f's/d{{i}}')
        os.rename(f's/h{{i}}', f's/d{{i}}')
    time.sleep(0.002)
print('swapped')
"""

# A chain of directories whose full path is far beyond PATH_MAX (4096): 24 long names, then 2500
# one-letter levels (deeper than Python's recursion limit), a file at the bottom.
DEEP_CHAIN = """
import os
for i in range(24):
    os.mkdir('n' * 250)
    os.chdir('n' * 250)
for i in range(2500):
    os.mkdir('a')
    os.chdir('a')
open('bottom.txt', 'w').write('deep')
print('deep')
"""


def deepest(root: Path) -> os.stat_result:
    """lstat of the bottom file of DEEP_CHAIN, reached through directory descriptors."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in ["n" * 250] * 24 + ["a"] * 2500:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        return os.stat("bottom.txt", dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


def test_a_directory_swapped_for_a_link_to_a_big_host_dir_is_not_measured(bwrap, workdir, runtime, limits):
    capped = limits.replace(max_scratch_bytes=32 << 20)

    result = bwrap.run([PY, "-c", SWAPPER], workdir, runtime, capped)

    assert result.ok, (result.reason, result.stderr_text[-2000:])
    assert result.limit is None
    assert "swapped" in result.stdout_text


def test_a_link_counts_as_itself_not_as_what_it_points_to(tmp_path):
    (tmp_path / "venv").symlink_to(BIG_HOST_DIR)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "up").symlink_to("..")

    assert disk_usage(tmp_path) < 64 << 10


def test_a_chain_deeper_than_path_max_is_handed_back_measured_and_removed(bwrap, workdir, runtime, limits):
    capped = limits.replace(max_scratch_bytes=1 << 30, wall_clock_seconds=60)
    try:
        result = bwrap.run([PY, "-c", DEEP_CHAIN], workdir, runtime, capped)

        assert result.ok, (result.reason, result.stderr_text[-2000:])
        assert "deep" in result.stdout_text
        # Handed back to the workdir's owner all the way down, and every level counted.
        assert deepest(workdir).st_uid == os.getuid()
        assert disk_usage(workdir) >= (24 + 2500) * 4096
    finally:
        tree_remove(workdir)  # also keeps such a tree out of pytest's own (recursive) cleanup
    assert not workdir.exists()


def test_a_scratch_tree_removes_what_shutil_rmtree_cannot(tmp_path):
    with scratch_tree("score-", tmp_path) as scratch:
        fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY)
        for _ in range(3000):  # shutil.rmtree recurses once per level: RecursionError here
            os.mkdir("a", dir_fd=fd)
            child = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(fd)
        os.chmod(scratch, 0o500)

    assert list(tmp_path.iterdir()) == []


def test_a_tree_the_host_cannot_take_back_is_that_runs_error_not_the_hosts(bwrap, workdir, runtime, limits):
    # A worker with few descriptors left meets a chain deeper than it can hold open.
    chain = "import os\nfor i in range(400):\n    os.mkdir('a'); os.chdir('a')\nprint('dug')"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        result = bwrap.run([PY, "-c", chain], workdir, runtime, limits)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        tree_remove(workdir)

    assert "dug" in result.stdout_text
    assert not result.ok and result.limit == "workdir"
    assert result.reason == ("the run left its working directory in a state the host could not take back "
                             "(Too many open files)")
    assert not workdir.exists()
