from django.http import HttpRequest

from raters.models import Group, Rater, Study

SESSION_RATER_KEY = "rater_id"
SESSION_PENDING_KEY = "pending_entry"


def rater_from_session(request: HttpRequest) -> Rater | None:
    public_id = request.session.get(SESSION_RATER_KEY)
    if not public_id:
        return None
    return Rater.objects.select_related("study__tournament").filter(public_id=public_id).first()


def rater_for_participant(*, study_id: int, participant_hash: str | None) -> Rater | None:
    """The rater a panel participant already has in this study (open-link raters have no participant)."""
    if participant_hash is None:
        return None
    return Rater.objects.filter(study_id=study_id, participant_hash=participant_hash).first()


def study_open_for_anyone() -> Study | None:
    return Study.objects.filter(is_open=True, allows_open_entry=True).order_by("pk").first()


def screener_groups(*, country: str) -> dict[str, list[Group]]:
    """The screener's options for one country, by axis."""
    by_axis: dict[str, list[Group]] = {}
    for group in Group.objects.filter(country=country).order_by("axis", "position"):
        by_axis.setdefault(group.axis, []).append(group)
    return by_axis
