"""One source for the documentation: the site's guides are the files of docs/, README.md is a one-screen
quick start whose commands are the guides' own, each command is written in one guide only, every link
resolves both in the repository and on the site, and the official client's limits are stated as its
journey test (tests/interop/test_official_client_journey.py) finds them."""

import re
from pathlib import Path

import pytest
from django.test import Client

from portal.guides import selectors
from portal.guides.selectors import DOCS_DIR, GUIDES, Audience, site_href
from tests.interop.test_official_client_journey import OFFICIAL_CLIENT_SAYS

pytestmark = pytest.mark.django_db

REPO = DOCS_DIR.parent
README = REPO / "README.md"
# Pages other branches add (docs/install.md, docs/sandboxes.md): README and the guides link them already. Once
# a file exists it is checked like every other; drop its name here then.
PENDING_DOCS: set[str] = set()
_FENCE = re.compile(r"^\s*```(\w*)\n(.*?)^\s*```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The Markdown without its fenced blocks and code spans (a link written inside them is not a link)."""
    return re.sub(r"`[^`\n]*`", "", _FENCE.sub("", text))


def shell_commands(text: str, program: str = "asibench") -> set[str]:
    """The `program …` lines of the shell blocks, continuations joined, comments and spacing normalised."""
    out = set()
    for language, body in _FENCE.findall(text):
        if language != "sh":
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith(program + " "):
                out.add(" ".join(line.split()))
    return out


def own_pages() -> dict[str, str]:
    """README.md and the pages this repository lists in GUIDES, by name."""
    pages = {"README.md": README.read_text()}
    pages.update({guide.path.name: guide.path.read_text() for guide in GUIDES})
    return pages


def test_every_page_of_the_site_is_a_file_of_docs_and_every_file_of_docs_a_page(client):
    assert not list((REPO / "portal" / "guides").rglob("*.md")), "guides' Markdown belongs in docs/"
    pages = {guide.slug: guide for guide in selectors.guide_list()}
    assert set(pages) == {path.stem for path in DOCS_DIR.glob("*.md")}
    for slug, guide in pages.items():
        source = guide.path.read_text()
        assert guide.path.parent == DOCS_DIR and source.startswith(f"# {guide.title}\n"), slug
        html = client.get(guide.url).content.decode()
        # The page is that file: each of its section headings is on the page, in the file's order.
        headings = [re.sub(r"\s*\{#[^}]*\}$", "", h).strip().replace("`", "")
                    for h in re.findall(r"^#{2,3} (.+)$", _FENCE.sub("", source), re.MULTILINE)]
        shown = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h[23][^>]*>(.*?)</h[23]>", html)]
        assert [h for h in shown if h in headings] == headings, slug
    index = client.get("/guides/").content.decode()
    users = index.split('data-testid="operator-guide-list"')[0]
    for guide in GUIDES:
        assert (f'href="{guide.url}"' in users) == (guide.audience == Audience.USERS), guide.slug


def test_code_blocks_start_at_the_margin_where_the_site_renders_them():
    # Python-Markdown renders a fenced block inside a list item as inline text: keep them out of lists.
    for path in DOCS_DIR.glob("*.md"):
        assert not re.search(r"^[ \t]+```", path.read_text(), re.MULTILINE), path.name


def test_links_between_files_become_site_links_and_links_into_the_repository_are_dropped():
    assert site_href("faq.md#wrong_seed") == "/guides/faq/#wrong_seed"
    assert site_href("./getting-started.md") == "/guides/getting-started/"
    for kept in ("/tasks/definitions.tar.gz", "#pull", "https://huggingface.co/docs", "mailto:x@y.example"):
        assert site_href(kept) == kept
    for dropped in ("../README.md", "../tasks/", "no-such-page.md", "../docs/faq.md"):
        assert site_href(dropped) is None, dropped
    html = Client().get("/guides/getting-started/").content.decode()
    assert 'href="/guides/faq/#wrong_seed"' in html and 'href="/guides/submit-results/#sandbox-rule"' in html
    assert ".md" not in "".join(re.findall(r'href="([^"]*)"', html))


def _anchors(page: Path) -> set[str]:
    """The ids a page has on the site (explicit `{#id}` and generated from its headings)."""
    guide = selectors.guide_get(page.stem)
    return set(re.findall(r'\bid="([^"]+)"', str(selectors.guide_render(guide).html)))


def test_every_relative_link_of_the_readme_and_docs_resolves_with_its_anchor():
    files = [README, *sorted(DOCS_DIR.glob("*.md"))]
    checked = 0
    for source in files:
        for target in _LINK.findall(prose(source.read_text())):
            if re.match(r"^[a-z]+:", target) or target.startswith("/"):
                continue  # other sites, and this site's own pages
            path, _, anchor = target.partition("#")
            where = (source.parent / path).resolve() if path else source
            if where.name in PENDING_DOCS and where.parent == DOCS_DIR and not where.exists():
                continue
            assert where.exists(), f"{source.name}: {target}"
            if anchor and where.parent == DOCS_DIR and where.suffix == ".md":
                assert anchor in _anchors(where), f"{source.name}: {target}"
            checked += 1
    assert checked > 40


def test_the_readme_is_one_screen_whose_commands_are_the_guides_own():
    readme = README.read_text()
    assert len(readme.splitlines()) <= 60
    commands = shell_commands(readme)
    assert {c.split()[1] for c in commands} >= {"login", "task", "run", "submit"}  # the journey
    guides = set().union(*(shell_commands(guide.path.read_text()) for guide in GUIDES))
    assert commands <= guides, commands - guides
    for needed in ("make run", "make test", "docs/getting-started.md#official-client"):
        assert needed in readme, needed


def test_each_command_is_written_in_one_page_only_and_in_one_form():
    seen: dict[str, str] = {}
    for name, text in own_pages().items():
        if name == "README.md":
            continue
        for command in shell_commands(text):
            assert command not in seen, f"{command!r} is written in {seen[command]} and {name}"
            seen[command] = name
    for name, text in own_pages().items():
        # One form: the virtualenv activated once, then `asibench`, `python manage.py`, `python bench/…`.
        for line in text.splitlines():
            assert not re.search(r"\.venv/bin/(?!activate\b)", line), f"{name}: {line}"


def test_the_official_clients_journey_and_limits_are_stated_where_the_docs_promise_every_step():
    guide = (DOCS_DIR / "getting-started.md").read_text()
    section = guide[guide.index("{#official-client}"):]
    for needed in ('HF_ENDPOINT="$ASIBENCH_SUBMIT_ENDPOINT/hf"', "/tasks/definitions.tar.gz", "--tasks-dir tasks",
                   "tar -xzf definitions.tar.gz", *OFFICIAL_CLIENT_SAYS.values()):
        assert needed in section, needed
    assert "every step works" not in guide.lower()
    # Wherever a page speaks of the Hugging Face Hub, it says how the official client reaches this Portal.
    for name, text in {"README.md": README.read_text(),
                       **{p.name: p.read_text() for p in DOCS_DIR.glob("*.md")}}.items():
        if re.search(r"Hugging Face|official Hub", text):
            assert "HF_ENDPOINT" in text, name
    page = Client().get("/guides/getting-started/").content.decode()
    assert 'href="/tasks/definitions.tar.gz"' in page
