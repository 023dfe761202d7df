"""The guides: Markdown files in ``content/``, one per guide, rendered with the figures filled in.

Guides are repository content, reviewed with the code, but they go through the same sanitiser as
author Markdown (plus heading ids, so sections and FAQ entries can be linked).
"""

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

from portal.errors import NotFound
from portal.guides.figures import fill_figures
from portal.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, ALLOWED_URL_SCHEMES, _NoRawHtml

CONTENT_DIR = Path(__file__).resolve().parent / "content"
_HEADINGS = ("h2", "h3", "h4")


@dataclass(frozen=True)
class Guide:
    slug: str
    title: str
    summary: str

    @property
    def path(self) -> Path:
        return CONTENT_DIR / f"{self.slug}.md"

    @property
    def url(self) -> str:
        return f"/guides/{self.slug}/"


GUIDES = (
    Guide("getting-started", "Getting started",
          "Sign up, sign a client in, pull, run, submit and confirm: with our client or the official one."),
    Guide("submit-results", "Submit results",
          "What a valid bundle is, the limits, and what happens after the upload: draft, Confirm, queue, "
          "review, publication."),
    Guide("contribute-a-task", "Contribute a task",
          "Propose a task in the browser or from the command line, the B3/B4 gate, and review."),
    Guide("how-scoring-works", "How scoring works",
          "The two seeds, private references, centralised scoring, reproducibility and judges."),
    Guide("faq", "Refusals: what they mean and what to do",
          "Every reason code the Portal gives when it refuses an upload, a confirm or a proposal."),
)


@dataclass(frozen=True)
class RenderedGuide:
    guide: Guide
    html: SafeString
    toc: list[dict[str, Any]]  # [{"level": 2, "id": "...", "name": "..."}] in page order


def guide_list() -> tuple[Guide, ...]:
    return GUIDES


def guide_get(slug: str) -> Guide:
    for guide in GUIDES:
        if guide.slug == slug:
            return guide
    raise NotFound("There is no guide with this name.")


def _flatten(tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for token in tokens:
        out.append({"level": token["level"], "id": token["id"], "name": html.unescape(token["name"])})
        out.extend(_flatten(token["children"]))
    return out


def guide_render(guide: Guide) -> RenderedGuide:
    md = markdown.Markdown(extensions=["fenced_code", "tables", "attr_list", "toc", _NoRawHtml()],
                           extension_configs={"toc": {"toc_depth": "2-3"}})
    body = md.convert(fill_figures(guide.path.read_text(encoding="utf-8")))
    attributes = {**ALLOWED_ATTRIBUTES, **{tag: {"id"} for tag in _HEADINGS}}
    clean = nh3.clean(body, tags=ALLOWED_TAGS, attributes=attributes, url_schemes=ALLOWED_URL_SCHEMES,
                      clean_content_tags={"script", "style"}, link_rel="noopener noreferrer", strip_comments=True)
    return RenderedGuide(guide=guide, html=mark_safe(clean),  # noqa: S308 — sanitised by the allowlist above
                         toc=_flatten(getattr(md, "toc_tokens", [])))
