"""Staff pages of the leaderboard: the linked battle export, and how far each board of a study is from
announcing its leader (the study dashboard in raters loads that panel by URL, so raters never imports
the leaderboard)."""

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods, require_safe

from leaderboard import exports
from leaderboard.exports import boards_all
from raters.audit import audit_record
from raters.models import Study
from raters.permissions import EXPORT_LINKED, VIEW_STUDY, staff_permission_required
from tournaments.models import Tournament


@staff_permission_required(EXPORT_LINKED)
@require_http_methods(["GET"])
def battles_linked(request, slug: str):
    """The battle export with pseudonyms that are the same in every linked export of the tournament, for
    a researcher who must follow raters across downloads; granted per person, and audited."""
    tournament = get_object_or_404(Tournament, slug=slug)
    audit_record(
        actor=request.user.get_username(), action="battles_export_linked", target=f"tournament {slug}"
    )
    response = StreamingHttpResponse(
        exports.battle_lines(tournament=tournament, linked=True),
        content_type="application/x-ndjson; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{slug}-battles-linked.jsonl"'
    response["Cache-Control"] = "private, no-store"
    return response


@staff_permission_required(VIEW_STUDY)
@require_safe
def study_boards(request, study_slug: str):
    """Per fitted board of the study's tournament: announced leader or not, and the estimated battles
    still needed (stats.announce)."""
    study = get_object_or_404(Study.objects.select_related("tournament"), slug=study_slug)
    return render(
        request,
        "leaderboard/staff/_study_boards.html",
        {"study": study, "boards": boards_all(tournament=study.tournament)},
    )
