from django.contrib import admin

from proposals.models import Proposal, ReviewEvent, Revision


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    list_display = ("task_id", "owner", "status", "updated_at")
    list_filter = ("status",)
    search_fields = ("task_id", "name", "owner__email")
    readonly_fields = ("snapshot", "cli_snapshot", "last_validation", "imported_from")


@admin.register(Revision)
class RevisionAdmin(admin.ModelAdmin):
    list_display = ("proposal", "number", "content_hash", "created_at")

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False  # frozen


@admin.register(ReviewEvent)
class ReviewEventAdmin(admin.ModelAdmin):
    list_display = ("proposal", "kind", "actor", "created_at")
