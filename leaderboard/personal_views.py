from dataclasses import replace
from urllib.parse import urlencode

from django.conf import settings
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST, require_safe

from config.client_ip import network_fingerprint
from config.errors import ApplicationError, Forbidden, InvalidInput, RateLimited
from leaderboard.boards import publishable_group_ids
from leaderboard.personal import (
    MAX_WEIGHT,
    PersonalBoard,
    personal_board,
    personal_params,
    personal_tournament,
    profile_choices,
)
from leaderboard.quiz import DIMENSION as QUIZ_DIMENSION
from leaderboard.quiz import quiz_build, quiz_dimension, quiz_encoded_for_rater
from leaderboard.quiz_contributions import contributed_board, quiz_contribution_add
from raters.decorators import rater_required
from raters.models import Country, Rater

# The element htmx swaps when only the results change; any other request gets the whole page.
RESULTS_TARGET = "personal-results"
QUIZ_TARGET = "personal-quiz"
BAR_WIDTH = 120


@require_safe
def personal(request):
    """The personal leaderboard. The query string is the whole state, so every board has a link; htmx
    swaps the results as the sliders and selects move and puts the normalised query in the address bar.

    The page only reads: it touches no session and, with no form to protect, renders an empty CSRF
    token, so the middleware sets no cookie either. Nothing about the visitor is kept.
    """
    params = personal_params(query=request.GET)
    tournament, problem = personal_tournament(slug=params.pop("tournament_slug"))
    if tournament is None:
        return render(request, "leaderboard/personal.html", {"board": None, "csrf_token": ""})
    board = personal_board(tournament=tournament, **params)
    if problem:
        board = board.with_problem(problem)
    bars = interval_bars(board)
    quiz = None
    if board.ranked and not board.suppressed:
        dimension, dimension_problem = quiz_dimension(tournament=tournament, slug=request.GET.get("qdim"))
        quiz = quiz_build(
            tournament=tournament,
            groups=tuple(group.slug for group in board.profile),
            encoded=request.GET.get("quiz", ""),
            item=request.GET.get("item"),
            answer=request.GET.get("answer"),
            style_controlled=board.style_controlled,
            dimension=dimension,
            dimension_answer=request.GET.get("danswer"),
        )
        if quiz and dimension_problem:
            quiz = replace(quiz, problems=(dimension_problem, *quiz.problems))
    query = quiz_query(board, quiz.encoded, quiz.dimension) if quiz else board.query
    context = {
        "board": board,
        "rows": [(row, bars.get(row.model_id)) for row in board.rows],
        "bar_width": BAR_WIDTH,
        "csrf_token": "",
        "quiz": quiz,
        "query": query,
        "quiz_dimensions": quiz_dimension_choices(tournament) if quiz else [],
    }
    if request.htmx and request.htmx.target == RESULTS_TARGET:
        response = render(request, "leaderboard/personal_results.html", context)
        if quiz:
            # A new profile moves the visitor's own board too (it starts from the profile's board).
            quiz_html = render_to_string("leaderboard/personal_quiz_oob.html", context, request)
            response.content += quiz_html.encode(response.charset)
    elif request.htmx and request.htmx.target == QUIZ_TARGET:
        response = render(request, "leaderboard/personal_quiz.html", context)
    else:
        context.update(
            countries=Country.objects.all(), axes=profile_choices(board=board), max_weight=MAX_WEIGHT
        )
        response = render(request, "leaderboard/personal.html", context)
    if request.htmx:
        response["HX-Push-Url"] = f"{request.path}?{query}"
    return response


def quiz_query(board: PersonalBoard, encoded: str, dimension) -> str:
    """The board's query plus the quiz's answers and dimension: the whole state, for the address bar."""
    params = [("quiz", encoded)] if encoded else []
    if dimension is not None:
        params.append(("qdim", dimension.slug))
    return "&".join(filter(None, [board.query, urlencode(params)]))


def quiz_dimension_choices(tournament) -> list:
    """The dimensions a visitor may judge besides overall, in the tournament's order."""
    return list(tournament.dimensions.exclude(slug=QUIZ_DIMENSION).order_by("position"))


def interval_bars(board: PersonalBoard) -> dict[int, dict[str, float]]:
    """Per ranked model, where its interval and score fall on one scale shared by the whole table, for
    the small SVG beside each score (drawn with attributes: the CSP allows no inline styles)."""
    ranked = [row for row in board.rows if row.score is not None]
    if not ranked:
        return {}
    low = min(row.score_low for row in ranked)
    high = max(row.score_high for row in ranked)
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return round(4 + (BAR_WIDTH - 8) * (value - low) / span, 1)

    return {
        row.model_id: {"low": x(row.score_low), "high": x(row.score_high), "score": x(row.score)}
        for row in ranked
    }


@csrf_exempt  # see below
@require_POST
def personal_contribute(request):
    """Add the visitor's quiz answers to the open data, only when they ticked the box.

    No CSRF token: the personal page sets no cookie, and this write carries no identity (no session,
    no rater). It is rate limited per network and idempotent instead, and a browser's post from another
    site is refused by its Origin (`_from_this_site`). Bad input (no tick, no answers, an altered link,
    another site) is answered with a clear error and stores nothing."""
    try:
        context = _contribution_added(request)
    except ApplicationError as error:
        # Rendered here rather than by the error middleware, with an empty CSRF token as on the personal
        # page, so that a refused submission sets no cookie either.
        context = {"title": error.title, "message": error.message, "csrf_token": ""}
        response = render(request, "error.html", context, status=error.status)
        if isinstance(error, RateLimited):
            response["Retry-After"] = str(error.retry_after)
        return response
    return render(request, "leaderboard/personal_contributed.html", context)


def _from_this_site(request) -> bool:
    """Whether the form was not posted by a browser from another site. Browsers send the page's Origin
    with every form POST; without a CSRF cookie (which the personal page must not set) that is what stops
    another site from having its visitors' browsers, each on its own network, add answers past the
    per-network rate limit. A request without an Origin is no browser's cross-site post: it is sent
    directly, from its own network."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    return origin == f"{request.scheme}://{request.get_host()}" or origin in settings.CSRF_TRUSTED_ORIGINS


def _contribution_added(request) -> dict:
    if not _from_this_site(request):
        raise Forbidden("Answers can only be added from this site's own page. Nothing was stored.")
    params = personal_params(query=request.POST)
    tournament, problem = personal_tournament(slug=params.pop("tournament_slug"))
    if tournament is None or problem:
        raise InvalidInput("This board's tournament no longer exists. Nothing was stored.")
    board = personal_board(tournament=tournament, **params)
    dimension, dimension_problem = quiz_dimension(tournament=tournament, slug=request.POST.get("qdim"))
    if dimension_problem:
        raise InvalidInput(f"{dimension_problem} Nothing was stored.")
    added = quiz_contribution_add(
        tournament=tournament,
        encoded=request.POST.get("quiz", ""),
        groups=board.profile,
        dimension=dimension,
        opted_in=request.POST.get("open_data") == "yes",
        network=network_fingerprint(request),
    )
    return {
        "added": added,
        "tournament": tournament,
        "query": quiz_query(board, added.contribution.encoded, dimension),
        "csrf_token": "",
    }


@require_safe
def personal_open_answers(request):
    """The board of the quiz visitors who added their answers to the open data: an audience of its own,
    apart from every study's boards."""
    tournament, problem = personal_tournament(slug=request.GET.get("tournament"))
    if tournament is None:
        return render(
            request, "leaderboard/personal_open_answers.html", {"tournament": None, "csrf_token": ""}
        )
    rows, contributions, verdicts = contributed_board(tournament=tournament)
    context = {
        "csrf_token": "",
        "tournament": tournament,
        "rows": rows,
        "contributions": contributions,
        "verdicts": verdicts,
        "problem": problem,
    }
    return render(request, "leaderboard/personal_open_answers.html", context)


@require_safe
@rater_required
def personal_mine(request):
    """A panel rater's own board from their own votes, offered once their session is complete (so it
    cannot change how they vote): the personal page with their profile and their votes as answers."""
    rater = request.rater
    if rater.status != Rater.Status.COMPLETED:
        context = {"title": "Not yet", "message": "Your own board is offered after your last vote."}
        return render(request, "error.html", context, status=403)
    tournament = rater.study.tournament
    publishable = publishable_group_ids(tournament=tournament)
    params = [("tournament", tournament.slug)]
    if rater.country_id:
        params.append(("country", rater.country.code))
    params += [
        (group.axis.slug, group.slug)
        for group in rater.groups.select_related("axis").order_by("axis__position")
        if group.pk in publishable
    ]
    params.append(("quiz", quiz_encoded_for_rater(rater=rater, tournament=tournament)))
    return redirect(f"{reverse('leaderboard:personal')}?{urlencode(params)}")
