"""Catalog pages render author Markdown safely and show only public parts."""

import shutil
from pathlib import Path

from django.test import Client

from scoring.task_loading import catalog_load

TINY = Path(__file__).resolve().parents[1] / "scoring" / "catalog" / "tiny_task"


def test_a_prompt_cannot_inject_html_or_script_links(db, tmp_path):
    root = tmp_path / "tasks"
    shutil.copytree(TINY, root / "demo" / "tiny_sum")
    (root / "demo" / "tiny_sum" / "prompt_b2.md").write_text(
        "Add them.\n\n<script>alert('x')</script>\n\n[click](javascript:alert(1)) and [docs](https://numpy.org)\n"
    )
    assert not catalog_load(tasks_root=root).failures
    html = Client().get("/tasks/demo.tiny_sum/").content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;" in html
    assert "javascript:alert" not in html
    assert 'href="https://numpy.org"' in html
    assert "GENERATOR-SPECS-MARKER" not in html and "REF-MARKER" not in html


def test_unknown_pages_are_404(db):
    assert Client().get("/tasks/nope.missing/").status_code == 404
    assert Client().get("/datasets/seed7/").status_code == 404


def test_domains_read_as_words_and_statuses_are_explained(db):
    from tests.leaderboard.factories import make_catalog

    make_catalog({"computer_science": 1, "earth_science": 1})
    html = Client().get("/tasks/").content.decode()
    assert "<h2>Computer science <span" in html and "Computer_Science" not in html and "Computer_science" not in html
    legend = html[html.index('data-testid="status-legend"'):]
    assert "final</span> calibrated, with frozen prompts" in legend and "sample</span> a worked example" in legend
    task = Client().get("/tasks/earth_science.task_1/").content.decode()
    assert "<dd>Earth science</dd>" in task
    assert "1.0 · revision 1" in task and "final</span> calibrated, with frozen prompts" in task
