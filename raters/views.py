from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from config.errors import InvalidInput
from raters.decorators import rater_required
from raters.defaults import OPTIONAL_AXES
from raters.models import Axis, Country, Rater, Study
from raters.panel import InvalidPanelLink
from raters.selectors import (
    SESSION_PENDING_KEY,
    SESSION_RATER_KEY,
    rater_for_participant,
    rater_from_session,
    screener_groups,
    study_open_for_anyone,
)
from raters.services import PendingEntry, panel_entry_read, rater_create, rater_screen


def _start_session(request, *, rater: Rater | None = None, entry: PendingEntry | None = None) -> None:
    # A fresh session key on every entry, so a session id planted before the link was opened is useless.
    request.session.flush()
    if rater is not None:
        request.session[SESSION_RATER_KEY] = str(rater.public_id)
    if entry is not None:
        request.session[SESSION_PENDING_KEY] = entry.as_session()


@require_http_methods(["GET"])
def study_entry(request, study_slug: str):
    """Where a panel's study link lands, e.g. /s/<study>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=..."""
    study = get_object_or_404(Study, slug=study_slug)
    if not study.is_open:
        return render(request, "raters/study_closed.html", {"study": study}, status=410)
    try:
        entry = panel_entry_read(study=study, params=request.GET)
    except InvalidPanelLink as exc:
        return render(
            request, "error.html", {"title": "This link is not valid", "message": str(exc)}, status=400
        )
    returning = rater_for_participant(study_id=study.pk, participant_hash=entry.participant_hash)
    if returning:
        _start_session(request, rater=returning)
        return redirect("raters:next")
    _start_session(request, entry=entry)
    return redirect("raters:consent")


@require_http_methods(["GET"])
def rate_open(request):
    """The site's "Rate models" link: a rater without a panel id, in the study open to anyone."""
    if rater_from_session(request):
        return redirect("raters:next")
    study = study_open_for_anyone()
    if study is None:
        context = {"title": "No open study", "message": "No study is open to the public right now."}
        return render(request, "error.html", context, status=404)
    _start_session(request, entry=PendingEntry(study_id=study.pk))
    return redirect("raters:consent")


@require_http_methods(["GET", "POST"])
def consent(request):
    if rater_from_session(request):
        return redirect("raters:next")
    pending = request.session.get(SESSION_PENDING_KEY)
    if pending is None:
        return redirect("raters:open")
    study = get_object_or_404(Study, pk=pending["study_id"])
    if request.method == "POST":
        if request.POST.get("agree") != "yes":
            raise InvalidInput("Please tick the box to say you agree before continuing.")
        rater = rater_create(entry=PendingEntry(**pending))
        _start_session(request, rater=rater)
        return redirect("raters:screener")
    return render(request, "raters/consent.html", {"study": study, "tournament": study.tournament})


@require_http_methods(["GET", "POST"])
@rater_required
def screener(request):
    rater = request.rater
    if rater.is_screened:
        return redirect("raters:next")
    if request.method == "POST":
        country = request.POST.get("country", "")
        rater_screen(
            rater=rater, country=country, answers={axis: request.POST.get(axis, "") for axis in Axis.values}
        )
        return redirect("raters:next")
    country = request.GET.get("country", "")
    if country not in Country.values:
        return render(request, "raters/screener_country.html", {"countries": Country.choices})
    groups = screener_groups(country=country)
    questions = [
        {"axis": axis, "label": label, "options": groups.get(axis, []), "optional": axis in OPTIONAL_AXES}
        for axis, label in Axis.choices
    ]
    context = {"country": country, "country_label": Country(country).label, "questions": questions}
    return render(request, "raters/screener_details.html", context)


@require_http_methods(["GET"])
@rater_required
def next_step(request):
    """Send the rater to whatever they should do now."""
    if not request.rater.is_screened:
        return redirect("raters:screener")
    return redirect("tournaments:battle_next")
