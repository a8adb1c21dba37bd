"""Staff downloads of open data that the public ones do not give: the linked battle export."""

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_http_methods

from leaderboard import exports
from raters.audit import audit_record
from raters.permissions import EXPORT_LINKED, staff_permission_required
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
