"""Markdown from authors (prompts, proposals) rendered without raw HTML or script links.

Both the public catalog and the maintainers' review pages show author-written Markdown; raw
HTML is shown as text and only http(s), mailto and relative links survive.
"""

from xml.etree.ElementTree import Element

import markdown
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

SAFE_SCHEMES = ("http://", "https://", "mailto:", "#", "/")


class _SafeLinks(Treeprocessor):
    def run(self, root: Element) -> None:
        for element in root.iter():
            for attribute in ("href", "src"):
                value = (element.get(attribute) or "").strip()
                if value and not (value.lower().startswith(SAFE_SCHEMES) or ":" not in value.split("/")[0]):
                    element.set(attribute, "#unsafe-link-removed")


class _NoRawHtml(Extension):
    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 (Markdown's API)
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.treeprocessors.register(_SafeLinks(md), "safe_links", 0)


def render_markdown(text: str) -> SafeString:
    html = markdown.markdown(text, extensions=["fenced_code", "tables", _NoRawHtml()])
    return mark_safe(html)  # noqa: S308 — raw HTML disabled and links filtered above
