from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    label = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registered here, not imported by submissions: the submission side knows nothing of the board.
        from leaderboard import services
        from portal.submissions.scoring_runs import COMPLETION_HOOKS

        for hook in (services.integrity_flags_compute_for_run, services.owner_notify_scored):
            if hook not in COMPLETION_HOOKS:
                COMPLETION_HOOKS.append(hook)
