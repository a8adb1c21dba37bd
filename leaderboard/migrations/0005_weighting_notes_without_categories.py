"""Published weighting notes of earlier fits named census categories (some with a rater or two) when the
census could not be matched; keep the method, drop the categories."""

import re

from django.db import migrations

DETAIL = re.compile(r"census not matchable: .*?\)(?=; [A-Z]{2}: |; countries |$)", re.DOTALL)
GENERIC = "census not matchable for some categories)"


def notes_scrub(apps, schema_editor):
    FitSnapshot = apps.get_model("leaderboard", "FitSnapshot")
    for snapshot in FitSnapshot.objects.filter(settings__pooled__icontains="census not matchable:"):
        snapshot.settings["pooled"] = DETAIL.sub(GENERIC, snapshot.settings["pooled"])
        snapshot.save(update_fields=["settings"])


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0004_tournamentboards")]

    operations = [migrations.RunPython(notes_scrub, migrations.RunPython.noop)]
