import json

from django.core.management.base import BaseCommand

from leaderboard.bench import replay_benchmark
from leaderboard.bench_fit import coverage_simulation, fit_benchmark

FULL = {"replay_votes": 100_000, "fit_models": 130, "fit_battles": 1_700_000, "coverage_sims": 100}
QUICK = {"replay_votes": 5_000, "fit_models": 20, "fit_battles": 50_000, "coverage_sims": 10}


class Command(BaseCommand):
    help = (
        "Benchmark the ratings engine: replay with the closed-form TrueSkill kernel against the trueskill "
        "package, the batch fit at Arena scale against a logistic-regression Bradley-Terry fit, and the "
        "coverage of the pooled board's 95% intervals in simulation."
    )

    def add_arguments(self, parser):
        parser.add_argument("what", choices=["ratings"], help="What to benchmark.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object.")
        parser.add_argument("--quick", action="store_true", help="Small sizes, for a smoke test.")

    def handle(self, *args, as_json: bool, quick: bool, **options):
        sizes = QUICK if quick else FULL
        results = {
            "sizes": sizes,
            **replay_benchmark(votes=sizes["replay_votes"], repeats=1 if quick else 5),
            **fit_benchmark(n_models=sizes["fit_models"], n_battles=sizes["fit_battles"]),
            **coverage_simulation(n_sims=sizes["coverage_sims"]),
        }
        if as_json:
            self.stdout.write(json.dumps(results, indent=2, default=float))
            return
        for key, value in results.items():
            self.stdout.write(f"{key:>32}: {value}")
