"""`{% load board_tags %}`: links and number formats for the public boards."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse

register = template.Library()


@register.simple_tag
def board_url(tournament, dimension=None, group=None, top=None, style_controlled=False) -> str:
    """The plain link to a board (with its matrices' size and its style view when given). Built from the
    objects, never from the request's query string, so a cached page carries nothing a visitor typed."""
    query = _board_query(tournament, dimension, group, top)
    if style_controlled:
        query["style"] = "controlled"
    return f"{reverse('leaderboard:board')}?{urlencode(query)}"


@register.simple_tag
def matrices_url(tournament, dimension, group=None) -> str:
    """The page with every model's head-to-head matrices on a board."""
    return f"{reverse('leaderboard:matrices')}?{urlencode(_board_query(tournament, dimension, group, None))}"


def _board_query(tournament, dimension, group, top) -> dict[str, str]:
    query = {"tournament": tournament.slug}
    if dimension:
        query["dimension"] = dimension.slug
    if group:
        query["group"] = group.slug
    if top:
        query["top"] = str(top)
    return query


@register.simple_tag
def model_url(slug: str, tournament=None, dimension=None) -> str:
    query = {}
    if tournament:
        query["tournament"] = tournament.slug
    if dimension:
        query["dimension"] = dimension.slug
    url = reverse("leaderboard:model", args=[slug])
    return f"{url}?{urlencode(query)}" if query else url


@register.filter
def style_feature(value: str) -> str:
    """A style feature's display name ("list_items" -> "List items")."""
    from leaderboard.selectors import STYLE_FEATURE_NAMES

    return STYLE_FEATURE_NAMES.get(value, value)


@register.filter
def percent(value) -> str:
    """0.4567 → "46%"; None → an en dash."""
    return "\u2013" if value is None else f"{value:.0%}"


@register.filter
def rating(value) -> str:
    """An Arena-scale rating, to the point: 1012.4 → "1012"; None → an en dash."""
    return "\u2013" if value is None else f"{value:.0f}"


@register.filter
def score(value) -> str:
    return "\u2013" if value is None else f"{value:.3f}"
