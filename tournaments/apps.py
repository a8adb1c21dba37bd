from django.apps import AppConfig


class TournamentsConfig(AppConfig):
    name = "tournaments"
    verbose_name = "Models, tournaments and battles"

    def ready(self):
        from tournaments import receivers  # noqa: F401 - connects the receivers
