from django.contrib import admin
from django.utils.html import format_html_join

from scoring.models import Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    """Read-only: the catalog changes only through `manage.py catalog_load` and publishing."""

    list_display = ("id", "status", "revision", "warning_count", "unscorable_reason", "loaded_at")
    list_filter = ("status", "domain")
    search_fields = ("id", "name")
    fields = ("id", "name", "domain", "version", "status", "revision", "source_dir", "loaded_at",
              "warnings", "unscorable_reason")
    readonly_fields = fields

    @admin.display(description="warnings")
    def warning_count(self, task: Task) -> int:
        return len(task.load_warnings or [])

    @admin.display(description="load warnings")
    def warnings(self, task: Task) -> str:
        return format_html_join("\n", "<p>{}</p>", ((w,) for w in task.load_warnings or [])) or "none"

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
