from dataclasses import dataclass

from config.errors import NotFound
from leaderboard.live_trueskill import conservative_score
from leaderboard.models import Rating
from raters.models import Group
from tournaments.models import Dimension, Tournament


@dataclass(frozen=True)
class BoardRow:
    rank: int
    model_name: str
    maker: str
    mu: float
    sigma: float
    conservative: float
    battles: int
    wins: int
    losses: int
    ties: int


def leaderboard_rows(*, dimension: Dimension, group: Group | None) -> list[BoardRow]:
    """Every model of the tournament with its live rating on this board, best conservative score first.

    A model with no battles yet is listed at the prior, so nothing that entered the tournament is hidden.
    """
    ratings = {
        r.model_id: r for r in Rating.objects.filter(dimension=dimension, group=group).select_related("model")
    }
    entrants = {m.pk: m for m in dimension.tournament.llm_models.all()}
    entrants.update({model_id: r.model for model_id, r in ratings.items()})
    tournament = dimension.tournament
    unsorted = []
    for model_id, model in entrants.items():
        rating = ratings.get(model_id)
        mu, sigma = (
            (rating.mu, rating.sigma) if rating else (tournament.trueskill_mu, tournament.trueskill_sigma)
        )
        counts = (rating.wins, rating.losses, rating.ties) if rating else (0, 0, 0)
        unsorted.append((conservative_score(mu, sigma), model, mu, sigma, counts))
    unsorted.sort(key=lambda row: (-row[0], row[1].name))
    return [
        BoardRow(
            rank=position,
            model_name=model.name,
            maker=model.maker,
            mu=mu,
            sigma=sigma,
            conservative=score,
            battles=sum(counts),
            wins=counts[0],
            losses=counts[1],
            ties=counts[2],
        )
        for position, (score, model, mu, sigma, counts) in enumerate(unsorted, start=1)
    ]


def board_choices(*, tournament_slug: str | None, dimension_slug: str | None, group_slug: str | None):
    """Resolve the board named by query parameters, falling back to sensible defaults.

    Returns (tournament, dimension, group) or None when there is no tournament at all; unknown slugs
    raise `NotFound` with a message naming what was not found.
    """
    tournaments = Tournament.objects.order_by("-created_at")
    tournament = tournaments.filter(slug=tournament_slug).first() if tournament_slug else tournaments.first()
    if tournament is None:
        if tournament_slug:
            raise NotFound(f"There is no tournament called '{tournament_slug}'.")
        return None
    dimensions = tournament.dimensions.order_by("position")
    if dimension_slug:
        dimension = dimensions.filter(slug=dimension_slug).first()
        if dimension is None:
            raise NotFound(f"This tournament has no dimension called '{dimension_slug}'.")
    else:
        dimension = dimensions.filter(slug="overall").first() or dimensions.first()
    group = None
    if group_slug:
        group = Group.objects.select_related("axis__country").filter(slug=group_slug).first()
        if group is None:
            raise NotFound(f"There is no group called '{group_slug}'.")
    return tournament, dimension, group


def groups_by_country_and_axis() -> list[tuple[str, list[Group]]]:
    """Groups for the board selector, as (heading, groups) in display order."""
    sections: dict[str, list[Group]] = {}
    for group in Group.objects.select_related("axis__country"):
        sections.setdefault(f"{group.axis.country.name} · {group.axis.label}", []).append(group)
    return list(sections.items())
