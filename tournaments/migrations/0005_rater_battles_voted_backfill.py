"""Count each rater's voted battles into Rater.battles_voted (raters 0005), from the votes stored so far."""

from django.db import migrations
from django.db.models import Count


def backfill(apps, schema_editor):
    rater_model = apps.get_model("raters", "Rater")
    vote_model = apps.get_model("tournaments", "Vote")
    counts = vote_model.objects.values("battle__rater_id").annotate(n=Count("pk"))
    for row in counts.iterator():
        rater_model.objects.filter(pk=row["battle__rater_id"]).update(battles_voted=row["n"])


class Migration(migrations.Migration):
    dependencies = [
        ("raters", "0005_rater_battles_voted"),
        ("tournaments", "0004_quality_control_tables"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
