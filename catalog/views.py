from itertools import groupby

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from catalog import selectors
from catalog.health_views import task_health_context
from contracts import PROMPT_LEVELS
from portal.errors import NotFound
from portal.guides.faq import help_path
from portal.markdown import render_markdown
from portal.pages import not_found_page
from scoring.models import Task


def task_list(request: HttpRequest) -> HttpResponse:
    tasks = list(selectors.task_public_list())
    by_domain = [(domain, list(rows)) for domain, rows in groupby(tasks, key=lambda t: t.domain)]
    return render(
        request,
        "catalog/task_list.html",
        {"by_domain": by_domain, "task_count": len(tasks), "datasets": selectors.dataset_public_list(),
         "status_meanings": Task.STATUS_MEANINGS},
    )


def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    try:
        task = selectors.task_public_get(task_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    prompts = [(level, render_markdown(task.prompts.get(level, ""))) for level in PROMPT_LEVELS]
    return render(
        request,
        "catalog/task_detail.html",
        {
            "task": task,
            "meta": task.public_meta,
            "prompts": prompts,
            "placeholders": selectors.prompt_placeholders(task.prompts.get(level, "") for level in PROMPT_LEVELS),
            "inputs": (task.public_meta.get("input") or {}).get("files") or [],
            "outputs": (task.public_meta.get("output") or {}).get("files") or [],
            "datasets": selectors.task_datasets(task),
            "definition_dir": f"{selectors.DEFINITIONS_TOP}/{selectors.task_definition_dir(task.id)}",
            "difficulty": selectors.task_difficulty(task),
            "unscorable_help": help_path("task_unscorable"),
            "status_meaning": Task.STATUS_MEANINGS.get(task.status, ""),
            **task_health_context(request, task),
        },
    )


def dataset_detail(request: HttpRequest, name: str) -> HttpResponse:
    try:
        dataset = selectors.dataset_get(name)
    except NotFound as exc:
        return not_found_page(request, exc)
    instances = selectors.instance_list(dataset)
    return render(
        request,
        "catalog/dataset_detail.html",
        {
            "dataset": selectors.dataset_public_dict(dataset),
            "instances": [selectors.instance_public_dict(i) for i in instances],
        },
    )
