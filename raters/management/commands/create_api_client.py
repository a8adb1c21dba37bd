from django.core.management.base import BaseCommand, CommandError

from config.errors import InvalidInput
from raters.models import ApiClient, Study
from raters.services import api_client_create


class Command(BaseCommand):
    help = (
        "Make a rater API client for a study and print its token. The token is shown only this once; only "
        "its hash is stored. Automated clients need a study whose tournament is for automated raters."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--study", required=True, help="The study's slug: the study the client's raters join."
        )
        parser.add_argument(
            "--kind", required=True, choices=ApiClient.Kind.values, help="Who rates through it."
        )
        parser.add_argument("--name", required=True, help="A name for people, e.g. 'Judge persona: retiree'.")

    def handle(self, *args, study: str, kind: str, name: str, **options):
        found = Study.objects.select_related("tournament").filter(slug=study).first()
        if found is None:
            raise CommandError(f"No study is called {study!r}.")
        try:
            client, token = api_client_create(name=name, kind=kind, study=found)
        except InvalidInput as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(
            f"Made API client {client.pk} ({client.get_kind_display()}) for study {found.slug!r}. "
            "Its token follows; store it now, it cannot be shown again."
        )
        self.stdout.write(token)
