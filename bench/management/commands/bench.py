import importlib
import json

from django.core.management.base import BaseCommand, CommandError

# Each benchmark is a function `run(*, quick: bool) -> dict` in its own module, imported only when asked
# for, so one benchmark's dependencies never slow down another.
BENCHMARKS = {
    "ratings": "bench.ratings",
    "matchmaking": "bench.matchmaking",
    "matchmaking-boards": "bench.matchmaking_boards",
    "web": "bench.web",
    "qc": "bench.qc",
    "rigging": "bench.rigging",
    "personal": "bench.personal",
    "battles": "bench.battles",
    "scale": "bench.scale",
}


class Command(BaseCommand):
    help = (
        "Print benchmark figures. ratings: replay with the closed-form TrueSkill kernel against the "
        "trueskill package, the batch fit at Arena scale, interval coverage. matchmaking: the matchmaker "
        "against uniform random pairing in simulation (matchmaking-boards: only its every-board part). web: "
        "the leaderboard page and board API under "
        "concurrent load against a trivial view on the same server. rigging: votes a rigging attack "
        "needs on a plain Bradley-Terry board and on Populus's defended board, and the raters the "
        "defences hold out. personal: a visitor's own board against the pooled and profile boards on "
        "their held-out choices, in simulation. scale: an Arena-scale log through import, fit, first "
        "API and page requests."
    )

    def add_arguments(self, parser):
        parser.add_argument("what", choices=sorted(BENCHMARKS), help="What to benchmark.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object.")
        parser.add_argument("--quick", action="store_true", help="Small sizes, for a smoke test.")
        parser.add_argument(
            "--sizes",
            help="scale only: the sizes to measure, comma-separated, among full (1.7 million battles) and "
            "tenth (170,000); default both.",
        )

    def handle(self, *args, what: str, as_json: bool, quick: bool, sizes: str | None, **options):
        extra = {}
        if sizes:
            if what != "scale" or quick:
                raise CommandError("--sizes goes with `bench scale` alone, without --quick.")
            from bench.scale import SIZES

            names = [name.strip() for name in sizes.split(",") if name.strip()]
            unknown = sorted(set(names) - SIZES.keys())
            if unknown or not names:
                raise CommandError(f"Unknown size {', '.join(unknown)}: choose among {', '.join(SIZES)}.")
            extra["sizes"] = {name: SIZES[name] for name in names}
        results = importlib.import_module(BENCHMARKS[what]).run(quick=quick, **extra)
        if as_json:
            self.stdout.write(json.dumps(results, indent=2, default=float))
            return
        for key, value in results.items():
            self.stdout.write(f"{key:>32}: {value}")
