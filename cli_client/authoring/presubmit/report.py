"""The pre-submit report: each check's outcome, and the label of the checks that are the Portal's own."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.engine.static_checks import PORTAL_CHECK


@dataclass
class Check:
    name: str
    ok: bool | None
    """True passed, False failed, None skipped (an earlier check made it meaningless)."""
    summary: str
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": {True: "pass", False: "fail", None: "skipped"}[self.ok],
                "summary": self.summary, "details": self.details}


@dataclass
class ValidationReport:
    task_dir: Path
    task_id: str | None = None
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]

    def to_dict(self) -> dict[str, Any]:
        return {"task_dir": str(self.task_dir), "task_id": self.task_id, "ok": self.ok,
                "checks": [c.to_dict() for c in self.checks], "warnings": self.warnings}


def portal_check(why: str) -> str:
    """The label of a failure the official pre-submit would not report, with why the Portal needs it."""
    return f"({PORTAL_CHECK}: {why})"

