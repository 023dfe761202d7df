"""Markdown from authors (prompts, proposals), rendered and then sanitised with an allowlist.

Both the public catalog and the maintainers' review pages show author-written Markdown, and
authors are assumed hostile. Raw HTML is shown as text, and the rendered HTML then goes
through nh3 (the ammonia sanitiser), which parses it as a browser would: entity-encoded
schemes such as ``javascript&colon;`` are decoded before the scheme check, only the tags and
attributes below survive, and only http(s), mailto and relative links are kept.
"""

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "img", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},
    "ol": {"start"},
}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}


class _NoRawHtml(Extension):
    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 (Markdown's API)
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


def sanitise_html(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_URL_SCHEMES,
        clean_content_tags={"script", "style"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def render_markdown(text: str) -> SafeString:
    html = markdown.markdown(text, extensions=["fenced_code", "tables", _NoRawHtml()])
    return mark_safe(sanitise_html(html))  # noqa: S308 — sanitised by the allowlist above
