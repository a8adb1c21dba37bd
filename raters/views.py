from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_safe

from config.client_ip import network_fingerprint
from config.errors import InvalidInput
from raters.decorators import rater_required
from raters.models import Country, Rater, Study
from raters.panel import InvalidPanelLink
from raters.proof import Proof, ProofRefused, proof_challenge
from raters.selectors import (
    ACTIVE_STATUSES,
    SESSION_LIMITED_KEY,
    SESSION_PENDING_KEY,
    SESSION_RATER_KEY,
    rater_for_participant,
    rater_from_session,
    rater_outcome,
    screener_countries,
    session_may_see_code,
    study_open_for_anyone,
)
from raters.services import (
    PendingEntry,
    panel_entry_read,
    rater_admit,
    rater_complete_if_done,
    rater_create,
    rater_screen,
)

# A field people never see or fill (hidden from view, from screen readers and from the tab order);
# form-filling scripts tend to fill every field they find.
HONEYPOT_FIELD = "website"


def _start_session(
    request, *, rater: Rater | None = None, entry: PendingEntry | None = None, proven: bool = True
) -> None:
    # A fresh session key on every entry, so a session id planted before the link was opened is useless.
    request.session.flush()
    if rater is not None:
        request.session[SESSION_RATER_KEY] = str(rater.public_id)
        if not proven:
            request.session[SESSION_LIMITED_KEY] = {
                "since": timezone.now().isoformat(),
                "status": rater.status,
            }
    if entry is not None:
        request.session[SESSION_PENDING_KEY] = entry.as_session()


def _entry_proven(request, *, returning: Rater, entry: PendingEntry) -> bool:
    """Whether this browser shows it is the returning participant's own, beyond knowing their id: it
    already holds their full session, or the link carries the panel's session id they started with
    (Prolific gives each participant a session id per study, which is not shown to anyone else)."""
    current = rater_from_session(request)
    if current is not None and current.pk == returning.pk and SESSION_LIMITED_KEY not in request.session:
        return True
    return bool(entry.panel_session_hash) and entry.panel_session_hash == returning.panel_session_hash


def _session_to_replace(request, *, returning: Rater | None) -> Rater | None:
    """The rater whose unfinished session in this browser a link for someone else would replace."""
    current = rater_from_session(request)
    if current is None or (returning is not None and current.pk == returning.pk):
        return None
    return current if current.status in ACTIVE_STATUSES else None


@require_http_methods(["GET", "HEAD", "POST"])
def study_entry(request, study_slug: str):
    """Where a panel's study link lands, e.g. /s/<study>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...

    A link never silently replaces an unfinished session of someone else in this browser: a GET (which
    any other site can make) asks, and only the confirming POST (CSRF-protected) switches.
    """
    study = get_object_or_404(Study, slug=study_slug)
    confirmed = request.method == "POST" and request.POST.get("switch") == "yes"
    params = request.POST if request.method == "POST" else request.GET
    try:
        entry = panel_entry_read(study=study, params=params)
    except InvalidPanelLink as exc:
        return render(
            request, "error.html", {"title": "This link is not valid", "message": str(exc)}, status=400
        )
    returning = rater_for_participant(
        study_id=study.pk,
        participant_hash=entry.participant_hash,
        legacy_hash=entry.legacy_participant_hash,
    )
    if returning is not None and returning.api_client_id is not None:
        # The README promises that only the client that entered a participant sees them.
        context = {
            "title": "Please continue where you started",
            "message": "You take part in this study through another app or site. Please continue there.",
        }
        return render(request, "error.html", context, status=403)
    if not confirmed and _session_to_replace(request, returning=returning) is not None:
        fields = [(name, params[name]) for name in params if name != "csrfmiddlewaretoken"]
        return render(request, "raters/switch_session.html", {"study": study, "fields": fields})
    if returning:
        # Returning participants resume, or see their code again, even after the study closes.
        if rater_from_session(request) != returning:
            proven = _entry_proven(request, returning=returning, entry=entry)
            _start_session(request, rater=returning, proven=proven)
        elif SESSION_LIMITED_KEY in request.session and _entry_proven(
            request, returning=returning, entry=entry
        ):
            request.session.pop(SESSION_LIMITED_KEY)
            request.session.cycle_key()
        return redirect("raters:next")
    if not study.is_open:
        return render(request, "raters/study_closed.html", {"study": study}, status=410)
    _start_session(request, entry=entry)
    return redirect("raters:consent")


@require_safe
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


@require_http_methods(["GET", "HEAD", "POST"])
def consent(request):
    if rater_from_session(request):
        return redirect("raters:next")
    pending = request.session.get(SESSION_PENDING_KEY)
    if pending is None:
        return redirect("raters:open")
    study = get_object_or_404(Study, pk=pending["study_id"])
    entry = PendingEntry(**pending)
    # Only entries without a panel id do the proof of effort (raters.proof).
    bits = study.proof_of_effort_bits if entry.participant_hash is None else 0
    refused = None
    if request.method == "POST":
        if request.POST.get("agree") != "yes":
            raise InvalidInput("Please tick the box to say you agree before continuing.")
        proof = Proof(
            challenge=request.POST.get("proof_challenge", ""), counter=request.POST.get("proof_counter", "")
        )
        try:
            rater = rater_create(
                entry=entry,
                network_fingerprint=network_fingerprint(request),
                honeypot=request.POST.get(HONEYPOT_FIELD, ""),
                proof=proof,
            )
        except ProofRefused as exc:
            # The form again, with a fresh challenge the browser starts on at once: one more click retries.
            refused = exc
        else:
            _start_session(request, rater=rater)
            return redirect("raters:screener")
    context = {
        "study": study,
        "tournament": study.tournament,
        "honeypot_field": HONEYPOT_FIELD,
        "proof_bits": bits,
        "proof_challenge": proof_challenge(study_id=study.pk, bits=bits) if bits else "",
        "refused": refused,
    }
    return render(request, "raters/consent.html", context, status=refused.status if refused else 200)


@require_http_methods(["GET", "HEAD", "POST"])
@rater_required
def screener(request):
    rater = request.rater
    if rater.is_screened:
        return redirect("raters:next")
    if request.method == "POST":
        rater_screen(rater=rater, country_code=request.POST.get("country", ""), answers=request.POST)
        return redirect("raters:next")
    country = Country.objects.filter(code=request.GET.get("country", "")).first()
    if country is None:
        return render(request, "raters/screener_country.html", {"countries": screener_countries()})
    axes = country.axes.prefetch_related("groups")
    return render(request, "raters/screener_details.html", {"country": country, "axes": axes})


@require_safe
@rater_required
def next_step(request):
    """Send the rater to whatever they should do now: the screener, a battle, or the end of the session."""
    rater = request.rater
    if not rater.is_screened:
        return redirect("raters:screener")
    rater = rater_complete_if_done(rater=rater_admit(rater=rater))
    outcome = rater_outcome(rater=rater)
    if outcome is None:
        return redirect("tournaments:battle_next")
    own_session = session_may_see_code(request, rater=rater)
    if not own_session:
        outcome = outcome.withheld()
    # After the last vote, so it cannot change how they vote: their own board from their own votes.
    own_board = own_session and rater.status == Rater.Status.COMPLETED
    return render(request, "raters/outcome.html", {"outcome": outcome, "own_board": own_board})
