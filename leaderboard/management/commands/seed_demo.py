import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from config.env import env_str
from leaderboard.demo_votes import demo_votes_seed
from raters.models import Country, Study
from raters.services import quotas_apply_census_preset, sampling_frame_ensure_defaults
from tournaments.models import Vote
from tournaments.services import demo_tournament_seed

STAFF_USERNAME = "admin"


class Command(BaseCommand):
    help = "Seed the demo: 22 groups, four offline demo models, an open and a panel study, a staff login."

    def add_arguments(self, parser):
        parser.add_argument(
            "--simulated-raters",
            type=int,
            default=300,
            help="Made-up raters whose votes fill the boards on a first run (0: none).",
        )

    def handle(self, *args, simulated_raters: int, **options):
        created_groups = sampling_frame_ensure_defaults()
        tournament = demo_tournament_seed()
        Study.objects.get_or_create(
            slug="demo",
            defaults={"name": "Populus demo study", "tournament": tournament, "allows_open_entry": True},
        )
        panel_study = self._panel_study(tournament)
        if simulated_raters and not Vote.objects.filter(battle__tournament=tournament).exists():
            summary = demo_votes_seed(raters=simulated_raters, votes_per_rater=4)
            self.stdout.write(
                f"Simulated {summary['battles']} votes from {summary['raters']} made-up raters and fitted "
                "the boards, so the leaderboard has something to show."
            )
        password = self._staff_password()
        self.stdout.write(
            f"Demo ready: tournament '{tournament.name}' with {tournament.llm_models.count()} models, "
            f"{tournament.dimensions.count()} dimensions, {created_groups} new groups.\n"
            f"Staff login at /{settings.ADMIN_URL_PATH}  user: {STAFF_USERNAME}  password: {password}\n"
            f"Quota dashboard at /staff/studies/{panel_study.slug}/\n"
            f"Try a panel link: /s/{panel_study.slug}/?PROLIFIC_PID={secrets.token_hex(12)}"
        )

    def _panel_study(self, tournament) -> Study:
        """A Prolific-style study with census quotas for both countries, to show the panel round trip."""
        study, created = Study.objects.get_or_create(
            slug="demo-panel",
            defaults={
                "name": "Populus demo panel study",
                "tournament": tournament,
                "panel": Study.Panel.PROLIFIC,
                "completion_code": "DEMO-DONE",
                "screen_out_code": "DEMO-SCREENED-OUT",
                "quota_full_code": "DEMO-FULL",
                "battles_per_session": 3,
            },
        )
        if created:
            study.countries.set(Country.objects.filter(code__in=["US", "UK"]))
            for code in ("US", "UK"):
                quotas_apply_census_preset(
                    study=study, country_code=code, total=100, marginal=True, interlocking=False
                )
        return study

    def _staff_password(self) -> str:
        """The demo staff password: from DEMO_ADMIN_PASSWORD, else random and kept in var/ (git-ignored)
        so it can be printed again on every start."""
        path = settings.VAR_DIR / "demo_admin_password"
        password = env_str("DEMO_ADMIN_PASSWORD", "")
        if not password:
            if not path.exists():
                settings.VAR_DIR.mkdir(exist_ok=True)
                path.write_text(secrets.token_urlsafe(12))
                path.chmod(0o600)
            password = path.read_text().strip()
        user, _ = get_user_model().objects.get_or_create(username=STAFF_USERNAME)
        if not user.check_password(password) or not (user.is_staff and user.is_superuser):
            user.set_password(password)
            user.is_staff = user.is_superuser = True
            user.save()
        return password
