"""Which refusal codes the FAQ explains, and the address of each entry.

The FAQ's Markdown (docs/faq.md) is the one list: an entry is a heading with an explicit ``{#code}`` anchor.
Error answers (API and pages) link a code only when that anchor exists. No Django imports here:
the API's exception handler uses this module.
"""

import re
from functools import lru_cache
from pathlib import Path

FAQ_FILE = Path(__file__).resolve().parents[2] / "docs" / "faq.md"
FAQ_PATH = "/guides/faq/"
_ENTRY = re.compile(r"^###\s.*\{#([a-z0-9_]+)\}\s*$", re.MULTILINE)


@lru_cache(maxsize=1)
def faq_codes() -> frozenset[str]:
    return frozenset(_ENTRY.findall(FAQ_FILE.read_text(encoding="utf-8")))


def help_path(code: str | None) -> str | None:
    """The FAQ entry of a refusal code, as a site path, or None when the FAQ has no entry for it."""
    return f"{FAQ_PATH}#{code}" if code and code in faq_codes() else None


_MESSAGE_TAG = "faq-"


def message_tag(code: str | None) -> str:
    """Extra tag for a flash message about a refusal, so the page can link the FAQ entry."""
    return f"{_MESSAGE_TAG}{code}" if help_path(code) else ""


def message_help_path(extra_tags: str | None) -> str | None:
    for tag in (extra_tags or "").split():
        if tag.startswith(_MESSAGE_TAG):
            return help_path(tag.removeprefix(_MESSAGE_TAG))
    return None
