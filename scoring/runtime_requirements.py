"""Whether the environment generators and scorers run in satisfies a task's `runtime` block.

There is one such environment, not one per task: the bwrap backend runs the service's own
interpreter and venv (`scoring.sandbox.runtime`), and the scoring image installs the same pins
from requirements/base.txt. So what this process has installed is what a task gets, and a task
asking for more is refused when it is loaded, with the package named, rather than failing
halfway through a generation or a scoring.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet


def runtime_problems(*, python: object, packages: Iterable[str]) -> list[str]:
    """One message per requirement of `runtime.python` / `runtime.packages` this environment misses."""
    problems: list[str] = []
    if python not in (None, ""):
        try:
            wanted = SpecifierSet(str(python))
        except InvalidSpecifier:
            problems.append(f"runtime.python {python!r} is not a version specifier")
        else:
            if not wanted.contains(platform.python_version(), prereleases=True):
                problems.append(f"runtime.python {python} (this environment runs Python {platform.python_version()})")
    for raw in packages:
        try:
            requirement = Requirement(raw)
        except InvalidRequirement:
            problems.append(f"runtime.packages entry {raw!r} is not a pip requirement")
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{raw} (not installed in the generation and scoring environment)")
            continue
        if requirement.specifier and not requirement.specifier.contains(installed, prereleases=True):
            problems.append(f"{raw} (the generation and scoring environment has {requirement.name} {installed})")
    return problems
