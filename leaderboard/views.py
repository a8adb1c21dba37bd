"""Public pages: the leaderboard, a model's page and the methodology. Every view answers a plain link
with the full page and an htmx request with the fragment it swaps in. Rendered bodies are cached whole
(leaderboard/page_cache.py), so the pages hold nothing specific to a visitor.
"""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from config.errors import NotFound
from leaderboard.boards import board_get
from leaderboard.page_cache import cached_page
from leaderboard.quiz import model_taste_spread, taste_spreads
from leaderboard.selectors import (
    MATRIX_TOP_CHOICES,
    board_choices,
    board_page,
    dimension_named,
    group_sections,
    matrix_top_parse,
    methodology_figures,
    model_for_page,
    model_page,
    pair_matrix,
    rigging_facts,
    style_view,
    tournament_choices,
)
from raters.selectors import qc_error_rates


@require_safe
@cached_page
def leaderboard(request, *, fragment: bool):
    """One board: a tournament's dimension, for everyone or for one group, with its charts. Query
    parameters pick it, so every board has a plain link; htmx swaps the board area in place."""
    resolved = board_choices(
        tournament_slug=request.GET.get("tournament"),
        dimension_slug=request.GET.get("dimension"),
        group_slug=request.GET.get("group"),
    )
    if resolved is None:
        return render(request, "leaderboard/leaderboard.html", {"tournament": None})
    tournament, dimension, group = resolved
    style_controlled = style_view(request.GET.get("style"))
    top = matrix_top_parse(request.GET.get("top"))
    context = {
        "style_controlled": style_controlled,
        "tournament": tournament,
        "tournaments": tournament_choices(),
        "dimension": dimension,
        "group": group,
        "dimensions": tournament.dimensions.order_by("position"),
        "group_sections": group_sections(tournament=tournament, dimension=dimension),
        "page": board_page(
            dimension=dimension, group=group, style_controlled=style_controlled, matrix_top=top
        )
        if dimension
        else None,
        "matrix_top": top,
        "matrix_top_choices": MATRIX_TOP_CHOICES,
    }
    template = "leaderboard/_board.html" if fragment else "leaderboard/leaderboard.html"
    return render(request, template, context)


@require_safe
@cached_page
def matrices(request, *, fragment: bool):
    """Every model's head-to-head matrices on one board: the part of the leaderboard page that grows with
    the square of the field, on a page of its own."""
    resolved = board_choices(
        tournament_slug=request.GET.get("tournament"),
        dimension_slug=request.GET.get("dimension"),
        group_slug=request.GET.get("group"),
    )
    if resolved is None or resolved[1] is None:
        raise NotFound("No such board: name a tournament with a dimension.")
    tournament, dimension, group = resolved
    board = board_get(dimension=dimension, group=group)
    context = {
        "tournament": tournament,
        "dimension": dimension,
        "group": group,
        "board": board,
        "matrix": None if board.suppressed else pair_matrix(board),
    }
    return render(request, "leaderboard/matrices.html", context)


@require_safe
@cached_page
def model_detail(request, *, slug: str, fragment: bool):
    """A model in one tournament: its scores on every dimension and group, and how it fared against each
    opponent. The dimension tabs swap the detail section in place."""
    model, tournament, tournaments = model_for_page(slug=slug, tournament_slug=request.GET.get("tournament"))
    dimension = dimension_named(tournament=tournament, slug=request.GET.get("dimension"))
    if dimension is None:
        raise NotFound(f"The tournament '{tournament.slug}' has no dimensions yet.")
    context = {
        "page": model_page(model=model, tournament=tournament, tournaments=tournaments, dimension=dimension),
        # Like every figure about raters, published only once the pooled board is.
        "spread": None
        if board_get(dimension=dimension).suppressed
        else model_taste_spread(tournament=tournament, dimension=dimension.slug, model_slug=model.slug),
    }
    template = "leaderboard/_model_detail.html" if fragment else "leaderboard/model.html"
    return render(request, template, context)


@require_safe
@cached_page
def methodology(request, *, fragment: bool):
    """How the boards are made, with live figures for the chosen (or latest) tournament."""
    resolved = board_choices(
        tournament_slug=request.GET.get("tournament"), dimension_slug=None, group_slug=None
    )
    figures = methodology_figures(tournament=resolved[0]) if resolved else None
    context = {
        "qc_rates": qc_error_rates(),
        "figures": figures,
        "tournaments": tournament_choices(),
        "rigging": rigging_facts(),
        # Like every figure about raters, published only once the pooled board is.
        "spreads": taste_spreads(tournament=resolved[0])
        if figures and figures.pooled_raters is not None
        else None,
    }
    template = "leaderboard/_methodology.html" if fragment else "leaderboard/methodology.html"
    return render(request, template, context)
