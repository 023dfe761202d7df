"""The guides: the Markdown files of `docs/`, one page each, rendered with the figures filled in.

`docs/` is the one source of the documentation: the repository shows the files as they are (README links
them) and the site renders the same files at `/guides/<file name>/`. A link between two of them is written
as a relative file link (`faq.md#not_gzip`), which works on both: here it becomes `/guides/faq/#not_gzip`.
A relative link to anything else of the repository (`../README.md`) is a link only there, so the site
keeps its text and drops the target. Each file starts with its `# Title`, the page's title.

Guides are repository content, reviewed with the code, but they go through the same sanitiser as
author Markdown (plus heading ids, so sections and FAQ entries can be linked).
"""

import html
import re
import xml.etree.ElementTree as ET  # noqa: S405 — Markdown's own tree of our Markdown, nothing parsed from outside
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from portal.errors import NotFound
from portal.guides.figures import fill_figures
from portal.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, ALLOWED_URL_SCHEMES, _NoRawHtml

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
_HEADINGS = ("h2", "h3", "h4")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_TITLE = re.compile(r"\A# (.+)\n")


class Audience:
    USERS = "users"  # the guides for people who run agents and propose tasks, in reading order
    OPERATORS = "operators"  # running, extending and measuring a Portal


@dataclass(frozen=True)
class Guide:
    slug: str
    summary: str
    audience: str = Audience.USERS

    @property
    def path(self) -> Path:
        return DOCS_DIR / f"{self.slug}.md"

    @property
    def url(self) -> str:
        return f"/guides/{self.slug}/"

    @property
    def title(self) -> str:
        match = _TITLE.match(self.path.read_text(encoding="utf-8"))
        if match is None:
            raise ValueError(f"{self.path} does not start with its '# Title' line")
        return match.group(1).strip()


# The pages in the order the index shows them. Any other docs/*.md is a page too, listed after these.
GUIDES = (
    Guide("getting-started",
          "Sign up, sign a client in, pull, run, submit and confirm: with our client or the official one."),
    Guide("submit-results",
          "What a valid bundle is, the limits, and what happens after the upload: draft, Confirm, queue, "
          "review, publication."),
    Guide("contribute-a-task",
          "Propose a task in the browser or from the command line, the B3/B4 gate, and review."),
    Guide("how-scoring-works",
          "The two seeds, private references, centralised scoring, reproducibility and judges."),
    Guide("misconduct-review",
          "What the misconduct scanners read, what they find, who sees it, answering a finding, how well they do."),
    Guide("faq", "Every reason code the Portal gives when it refuses an upload, a confirm or a proposal."),
    Guide("install", "The supported Pythons, the system packages make run and make test each need, and how "
          "make run stops.", Audience.OPERATORS),
    Guide("sandboxes", "Which sandbox runs untrusted code (bwrap as root or as an ordinary user, docker, none) "
          "and exactly what each one enforces.", Audience.OPERATORS),
    Guide("operators", "Configuration, deploying with Docker or podman, scaling out, hosting task directories.",
          Audience.OPERATORS),
    Guide("judges", "Model judges: the official semantics, isolation, endpoints, budgets and replay.",
          Audience.OPERATORS),
    Guide("benchmarks", "The bench/ scripts and what they measured.", Audience.OPERATORS),
    Guide("contributing", "Working on the Portal: tests, the repository's tasks, the documentation.",
          Audience.OPERATORS),
    Guide("architecture", "The map of the code: one run end to end, the packages, where each rule lives.",
          Audience.OPERATORS),
)


def guide_list() -> tuple[Guide, ...]:
    listed = {guide.slug for guide in GUIDES}
    others = tuple(Guide(path.stem, "", Audience.OPERATORS) for path in sorted(DOCS_DIR.glob("*.md"))
                   if path.stem not in listed and _SLUG.match(path.stem))
    return GUIDES + others


def guide_get(slug: str) -> Guide:
    for guide in guide_list():
        if guide.slug == slug:
            return guide
    raise NotFound("There is no guide with this name.")


def site_href(href: str) -> str | None:
    """Where a link of a docs/ file points on the site: a docs file's page, or None for a relative link to
    something only the repository has. Absolute links, site paths and fragments are left as they are."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("/", "#")):
        return href
    page = parts.path.removeprefix("./")
    if page.endswith(".md") and "/" not in page and (DOCS_DIR / page).is_file():
        return f"/guides/{page.removesuffix('.md')}/" + (f"#{parts.fragment}" if parts.fragment else "")
    return None


class _DocLinks(Treeprocessor):
    def run(self, root: ET.Element) -> None:
        for link in root.iter("a"):
            href = site_href(link.get("href", ""))
            if href is None:
                link.attrib.pop("href", None)
            else:
                link.set("href", href)


class _SiteLinks(Extension):
    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 (Markdown's API)
        md.treeprocessors.register(_DocLinks(md), "guide_links", 5)


@dataclass(frozen=True)
class RenderedGuide:
    guide: Guide
    html: SafeString
    toc: list[dict[str, Any]]  # [{"level": 2, "id": "...", "name": "..."}] in page order


def _flatten(tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for token in tokens:
        out.append({"level": token["level"], "id": token["id"], "name": html.unescape(token["name"])})
        out.extend(_flatten(token["children"]))
    return out


def guide_render(guide: Guide) -> RenderedGuide:
    md = markdown.Markdown(extensions=["fenced_code", "tables", "attr_list", "toc", _NoRawHtml(), _SiteLinks()],
                           extension_configs={"toc": {"toc_depth": "2-3"}})
    text = guide.path.read_text(encoding="utf-8")
    body = md.convert(fill_figures(_TITLE.sub("", text, count=1)))
    attributes = {**ALLOWED_ATTRIBUTES, **{tag: {"id"} for tag in _HEADINGS}}
    clean = nh3.clean(body, tags=ALLOWED_TAGS, attributes=attributes, url_schemes=ALLOWED_URL_SCHEMES,
                      clean_content_tags={"script", "style"}, link_rel="noopener noreferrer", strip_comments=True)
    return RenderedGuide(guide=guide, html=mark_safe(clean),  # noqa: S308 — sanitised by the allowlist above
                         toc=_flatten(getattr(md, "toc_tokens", [])))
