"""The credential file shared with the official client (client contract §2.5)."""

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class CredentialStore:
    def __init__(self, directory: Path):
        self.path = directory / "credentials"

    @classmethod
    def from_env(cls, env: "os._Environ[str] | dict[str, str]") -> "CredentialStore":
        return cls(Path(env.get("ASIBENCH_CREDENTIALS_DIR") or Path.home() / ".asibench"))

    def _read_all(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, OSError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_all(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Create with 0600 from the start so the token is never world-readable, even briefly.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2, ensure_ascii=False))
        os.chmod(self.path, 0o600)

    def load(self, api_base: str) -> dict[str, Any] | None:
        entry = self._read_all().get(api_base.rstrip("/"))
        return entry if isinstance(entry, dict) and entry.get("token") else None

    def save(self, api_base: str, token: str, user: dict[str, Any] | None) -> Path:
        data = self._read_all()
        data[api_base.rstrip("/")] = {
            "token": token,
            "user": user or {},
            "created_at": datetime.now(UTC).isoformat(),
        }
        self._write_all(data)
        return self.path

    def clear(self, api_base: str | None) -> bool:
        if api_base is None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                return False
            return True
        data = self._read_all()
        removed = data.pop(api_base.rstrip("/"), None) is not None
        if removed:
            self._write_all(data)
        return removed

    def entries(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self._read_all().items() if isinstance(v, dict) and v.get("token")}

    def latest_api_base(self, is_api_base: Callable[[str], bool]) -> str | None:
        """The API base of the most recent saved login whose key `is_api_base` accepts (a Portal's, not a
        custom receiver's); logins saved at the same time (or without a readable time) go by file order."""
        ranked = [(_saved_at(entry), order, key) for order, (key, entry) in enumerate(self.entries().items())
                  if is_api_base(key)]
        return max(ranked)[2] if ranked else None


def _saved_at(entry: dict[str, Any]) -> datetime:
    try:
        saved = datetime.fromisoformat(str(entry.get("created_at")))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return saved if saved.tzinfo else saved.replace(tzinfo=UTC)
