"""The task page says what `{{ … }}` placeholders in a prompt template are: filled per instance."""

import shutil
from pathlib import Path

from django.test import Client

from scoring.task_loading import catalog_load

TINY = Path(__file__).resolve().parents[1] / "scoring" / "catalog" / "tiny_task"


def _load(tmp_path: Path, prompts: dict[str, str]) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(TINY, root / "demo" / "tiny_sum")
    for name, text in prompts.items():
        (root / "demo" / "tiny_sum" / name).write_text(text)
    assert not catalog_load(tasks_root=root).failures


def test_the_prompt_view_names_the_placeholders_and_says_they_are_filled_per_instance(db, tmp_path):
    _load(tmp_path, {"prompt_b1.md": "Integrate {{ n_bodies }} bodies to t = {{t_end}}, then {{ n_bodies }} again.\n",
                     "prompt_b3.md": "Report the {{ n_pairs }} closest pairs.\n"})
    html = Client().get("/tasks/demo.tiny_sum/").content.decode()
    note = html[html.index('data-testid="prompt-placeholders"'):html.index("</p>", html.index("prompt-placeholders"))]
    names = [n for n in ("n_bodies", "t_end", "n_pairs") if f"{{{{ {n} }}}}" in note]
    assert names == ["n_bodies", "t_end", "n_pairs"] and note.count("{{ n_bodies }}") == 1
    assert "fills them for each instance" in note
    assert "{{ n_bodies }}" in html[html.index("<h2>Prompts</h2>"):]  # the template itself is shown as written


def test_a_task_without_placeholders_still_explains_the_syntax(db, tmp_path):
    _load(tmp_path, {})
    html = Client().get("/tasks/demo.tiny_sum/").content.decode()
    assert "Names in double braces (<code>{{ … }}</code>)" in html
