from django.core.management.base import BaseCommand

from tournaments.services import demo_local_models_set


class Command(BaseCommand):
    help = (
        "Add the two local SmolLM2 configurations to the demo tournament at the given llama.cpp servers "
        "(POPULUS_REAL_LLM=1 make run does this), or, with no --base-url, take them out of matchmaking."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url",
            action="append",
            default=[],
            help="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8613/v1 (give one per configuration).",
        )

    def handle(self, *args, base_url: list[str], **options):
        for model in demo_local_models_set(base_urls=base_url):
            state = f"at {model.base_url}" if model.is_active else "out of matchmaking"
            self.stdout.write(f"{model.name}: {state}")
