from django.core.management.base import BaseCommand

from raters import qc
from tournaments.quality import quality_settings


class Command(BaseCommand):
    help = (
        "Run the quality-control rules over the labelled corpus and print, per rule, the bad items caught "
        "(struck or nudged) and missed, and the good items struck and passed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--corpus", default=str(qc.CORPUS_PATH), help="A corpus in the shipped format.")
        parser.add_argument(
            "--defaults", action="store_true", help="Use the code's default thresholds, not the admin's."
        )

    def handle(self, *args, corpus, defaults, **options):
        params = None if defaults else {rule: setting.params for rule, setting in quality_settings().items()}
        rows = qc.corpus_report(qc.load_corpus(corpus), params=params)
        columns = ["rule", *qc.CORPUS_REPORT_COLUMNS]
        self.stdout.write("  ".join(f"{c:>15}" for c in columns))
        for row in rows:
            self.stdout.write("  ".join(f"{row[c]!s:>15}" for c in columns))
