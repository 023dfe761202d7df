"""Author Markdown is hostile: after rendering, an allowlist sanitiser keeps only safe HTML."""

import re

import pytest

from portal.markdown import render_markdown

HOSTILE = [
    "[a](javascript:alert(1))",
    "[a](JaVaScRiPt:alert(1))",
    "[a](jav&#x61;script:alert(1))",
    "[a](javascript&colon;alert(1))",
    "[a](javascript&#58;alert(1))",
    "[a](javascript&#x3A;alert(1))",
    "[a](&#106;avascript:alert(1))",
    "[a][r]\n\n[r]: javascript&colon;alert(1)",
    "[a](vbscript&colon;msgbox(1))",
    "![i](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![i](data&colon;image/svg+xml,<svg onload=alert(1)>)",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<svg/onload=alert(1)>",
    "[a](https://ok.example \"t\" onmouseover=alert(1))",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_leaves_no_script_link_or_handler(text):
    html = str(render_markdown(text))
    tags = re.findall(r"<[^>]*>", html.lower())  # real tags only: escaped raw HTML is shown as text
    assert tags, html
    for tag in tags:
        assert "javascript" not in tag and "vbscript" not in tag, html
        assert "data:" not in tag and "data&colon;" not in tag and "&#" not in tag, html
        assert not re.match(r"</?(script|svg|iframe|object|embed|style)\b", tag), html
        assert not re.search(r"\son\w+\s*=", tag), html  # no event-handler attribute


def test_ordinary_markdown_survives_sanitising():
    html = str(render_markdown(
        "# Title\n\n**bold** [docs](https://numpy.org) [rel](../x.md) [mail](mailto:a@b.example) [top](#top)\n\n"
        "```python\nprint(1 < 2)\n```\n\n|a|b|\n|-|-|\n|1|2|\n"
    ))
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert 'href="https://numpy.org"' in html and 'href="../x.md"' in html
    assert 'href="mailto:a@b.example"' in html and 'href="#top"' in html
    assert '<code class="language-python">print(1 &lt; 2)' in html
    assert "<td>1</td>" in html
    assert 'rel="noopener noreferrer nofollow"' in html
