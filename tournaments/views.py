import uuid

from django.conf import settings
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe
from django_htmx.http import HttpResponseClientRedirect

from config.errors import NotFound, SessionEnded
from config.ratelimit import rate_limit
from raters.decorators import admitted_rater_required, rater_required
from raters.models import Rater
from raters.selectors import session_may_see_reveal
from raters.services import rater_complete_if_done
from tournaments.models import Battle
from tournaments.selectors import battle_for_rater, battle_reveal, battle_view, strike_warnings
from tournaments.services import battle_start, turn_submit, vote_submit


def _battle_page_or_fragment(request, battle: Battle):
    context = {"view": battle_view(battle=battle)}
    if request.htmx:
        return render(request, "tournaments/_battle_body.html", context)
    return render(request, "tournaments/battle.html", context)


@require_http_methods(["GET", "HEAD", "POST"])
@admitted_rater_required
def battle_next(request):
    """The rater's battle in progress, or a new one. POST from the "next battle" button; GET from links."""
    battle = battle_start(rater=request.rater)
    return redirect("tournaments:battle", public_id=battle.public_id)


@require_safe
@admitted_rater_required
def battle_detail(request, public_id: uuid.UUID):
    battle = battle_for_rater(rater=request.rater, public_id=public_id)
    if battle.state == Battle.State.VOTED:
        return redirect("tournaments:reveal", public_id=battle.public_id)
    return _battle_page_or_fragment(request, battle)


@require_http_methods(["POST"])
@admitted_rater_required
def turn_create(request, public_id: uuid.UUID):
    battle = battle_for_rater(rater=request.rater, public_id=public_id)
    rate_limit(
        action="messages", key=str(request.rater.public_id), limit=settings.RATE_LIMIT_MESSAGES_PER_MINUTE
    )
    turn_submit(battle=battle, message=request.POST.get("message", ""))
    if request.htmx:
        return _battle_page_or_fragment(request, battle)
    return redirect("tournaments:battle", public_id=battle.public_id)


@require_http_methods(["POST"])
@admitted_rater_required
def vote_create(request, public_id: uuid.UUID):
    battle = battle_for_rater(rater=request.rater, public_id=public_id)
    rate_limit(action="votes", key=str(request.rater.public_id), limit=settings.RATE_LIMIT_VOTES_PER_MINUTE)
    vote_submit(battle=battle, choices=request.POST)
    rater = rater_complete_if_done(rater=Rater.objects.get(pk=request.rater.pk))
    if rater.status == Rater.Status.EXCLUDED:
        raise SessionEnded("Your session has ended after three warnings.")
    url = reverse("tournaments:reveal", kwargs={"public_id": battle.public_id})
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@require_safe
@rater_required
def battle_reveal_page(request, public_id: uuid.UUID):
    battle = battle_for_rater(rater=request.rater, public_id=public_id)
    if battle.state != Battle.State.VOTED:
        return redirect("tournaments:battle", public_id=battle.public_id)
    if not session_may_see_reveal(request, voted_at=battle.vote.created_at):
        raise NotFound("There is no such battle in your session.")
    rater = request.rater
    context = {
        "battle": battle,
        "rows": battle_reveal(battle=battle),
        "warnings": strike_warnings(rater=rater, vote=battle.vote),
        "session_done": rater.status == Rater.Status.COMPLETED,
        "battles_done": rater.battles.filter(state=Battle.State.VOTED).count(),
        "battles_per_session": rater.study.battles_per_session,
    }
    return render(request, "tournaments/reveal.html", context)
