from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from leaderboard.selectors import board_choices, groups_by_country_and_axis, leaderboard_rows


@require_http_methods(["GET"])
def leaderboard(request):
    """One board: a tournament's dimension, for everyone or for one group. Query parameters pick it, so
    every board has a plain link; htmx swaps just the table when the selector changes."""
    resolved = board_choices(
        tournament_slug=request.GET.get("tournament"),
        dimension_slug=request.GET.get("dimension"),
        group_slug=request.GET.get("group"),
    )
    if resolved is None:
        return render(request, "leaderboard/leaderboard.html", {"tournament": None})
    tournament, dimension, group = resolved
    context = {
        "tournament": tournament,
        "dimension": dimension,
        "group": group,
        "dimensions": tournament.dimensions.order_by("position"),
        "group_sections": groups_by_country_and_axis(),
        "rows": leaderboard_rows(dimension=dimension, group=group) if dimension else [],
    }
    if request.htmx:
        return render(request, "leaderboard/_board.html", context)
    return render(request, "leaderboard/leaderboard.html", context)
