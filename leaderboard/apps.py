from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Ratings and leaderboards"

    def ready(self):
        from leaderboard import receivers  # noqa: F401 - connects the receivers
