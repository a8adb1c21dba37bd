"""Staff pages of the leaderboard: how far each board of a study is from announcing its leader.

The study dashboard (raters) loads this panel by URL, so raters never imports the leaderboard."""

from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods

from leaderboard.exports import boards_all
from raters.models import Study


@staff_member_required
@require_http_methods(["GET"])
def study_boards(request, study_slug: str):
    """Per fitted board of the study's tournament: announced leader or not, and the estimated battles
    still needed (stats.announce)."""
    study = get_object_or_404(Study.objects.select_related("tournament"), slug=study_slug)
    return render(
        request,
        "leaderboard/staff/_study_boards.html",
        {"study": study, "boards": boards_all(tournament=study.tournament)},
    )
