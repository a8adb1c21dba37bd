"""The board-reading core: figures from the latest fit, counts that match it, statuses, every entrant
listed, and the privacy rule (small groups suppressed, and not derivable by differencing)."""

import pytest
from django.core.cache import cache
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from config.errors import InvalidInput
from leaderboard.boards import (
    Status,
    board_cache_version,
    board_get,
    board_pair_results,
    publishable_group_ids,
    publishable_groups,
    rater_counts,
    snapshot_cutoff,
    snapshot_latest,
)
from leaderboard.models import FitBoardCounts
from leaderboard.services import fits_publish
from raters.models import Group, Rater
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import Battle, LLMModel

pytestmark = pytest.mark.django_db

YOUNG, MIDDLE, OLDER = "us-age-18-34", "us-age-35-54", "us-age-55-plus"


def group(slug: str) -> Group:
    return Group.objects.get(slug=slug)


def fitted(tournament, study, sizes: dict[str, int], **vote_options):
    """Raters in the given US age groups (no other answer), three votes each, then a fit."""
    for slug, count in sizes.items():
        votes_cast(tournament, raters_in(study, slug, count=count), seed=count, **vote_options)
    fits_publish(tournament_id=tournament.pk)


def overall(tournament):
    return tournament.dimensions.get(slug="overall")


# --- Suppression -------------------------------------------------------------------------------------


def test_it_suppresses_a_group_of_nine_raters_and_publishes_it_at_ten(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 9, MIDDLE: 11, OLDER: 10})
    board = board_get(dimension=overall(tournament), group=group(YOUNG))
    assert board.suppressed and board.raters is None and board.entries == []
    # Pooled minus the other two groups would give the nine away: the smallest other group hides too.
    assert board_get(dimension=overall(tournament), group=group(OLDER)).suppressed
    published = board_get(dimension=overall(tournament), group=group(MIDDLE))
    assert not published.suppressed and published.raters == 11
    assert publishable_group_ids(tournament=tournament) == {group(MIDDLE).pk}

    votes_cast(tournament, raters_in(study, YOUNG, count=1), seed=99)
    fits_publish(tournament_id=tournament.pk)
    board = board_get(dimension=overall(tournament), group=group(YOUNG))
    assert not board.suppressed and board.raters == 10
    assert sum(e.battles for e in board.entries) == 2 * 10 * 3
    assert all(e.rank is not None and e.score is not None for e in board.entries)
    assert publishable_group_ids(tournament=tournament) == {group(s).pk for s in (YOUNG, MIDDLE, OLDER)}


def test_it_suppresses_the_pooled_board_below_the_threshold(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 9})
    board = board_get(dimension=overall(tournament))
    assert board.suppressed and board.entries == [] and board.snapshot is not None
    assert publishable_group_ids(tournament=tournament) == set()


def test_it_follows_the_configured_threshold(tournament, study, groups, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    fitted(tournament, study, {YOUNG: 5, MIDDLE: 5})
    assert not board_get(dimension=overall(tournament), group=group(YOUNG)).suppressed


def test_it_counts_only_raters_whose_votes_count(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 10, MIDDLE: 10})
    assert not board_get(dimension=overall(tournament), group=group(YOUNG)).suppressed
    excluded = Rater.objects.filter(groups__slug=YOUNG).first()
    Rater.objects.filter(pk=excluded.pk).update(status=Rater.Status.EXCLUDED)
    fits_publish(tournament_id=tournament.pk)
    assert board_get(dimension=overall(tournament), group=group(YOUNG)).suppressed


def test_it_hides_a_country_that_only_differencing_would_reveal(tournament, study, groups):
    """Three UK raters are all hidden on their own axes; the US age groups, which every US rater
    answered, would otherwise give away the UK raters' battles as pooled minus US."""
    fitted(tournament, study, {YOUNG: 15, MIDDLE: 12, OLDER: 20, "uk-age-18-34": 3})
    publishable = publishable_group_ids(tournament=tournament)
    assert group("uk-age-18-34").pk not in publishable
    assert group(MIDDLE).pk not in publishable
    assert {group(YOUNG).pk, group(OLDER).pk} <= publishable


THRESHOLD = 10


def axis_counts():
    return st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=5)


@hypothesis_settings(max_examples=300, deadline=None)
@given(axes=st.lists(axis_counts(), min_size=1, max_size=3), others=st.integers(min_value=0, max_value=15))
def test_no_published_subtraction_reveals_fewer_raters_than_the_threshold(axes, others):
    """Each axis holds disjoint groups (a rater answers each axis once); `others` are raters with no
    group on an axis (declined, or from another country)."""
    counts, axis_groups, next_id = {}, [], 0
    for sizes in axes:
        ids = list(range(next_id, next_id + len(sizes)))
        next_id += len(sizes)
        counts.update(zip(ids, sizes, strict=True))
        axis_groups.append(ids)
    pooled = max(sum(counts[g] for g in ids) for ids in axis_groups) + others
    publishable = publishable_groups(counts=counts, pooled=pooled, axes=axis_groups, threshold=THRESHOLD)
    if pooled < THRESHOLD:
        assert publishable == set()
        return
    for ids in axis_groups:
        published = [g for g in ids if g in publishable]
        assert all(counts[g] >= THRESHOLD for g in published)
        hidden = [g for g in ids if g not in publishable and counts[g] > 0]
        outside = pooled - sum(counts[g] for g in published)
        assert outside == 0 or outside >= THRESHOLD
        if any(counts[g] < THRESHOLD for g in hidden):
            assert (sum(counts[g] for g in hidden) >= THRESHOLD and len(hidden) >= 2) or not published
        # Nothing is hidden without need: a group of enough raters on an axis with no small group and
        # no small remainder stays published.
        if (
            not any(0 < counts[g] < THRESHOLD for g in ids)
            and not 0 < pooled - sum(counts[g] for g in ids) < 10
        ):
            assert set(published) == {g for g in ids if counts[g] >= THRESHOLD}


def test_two_small_groups_that_together_reach_the_threshold_cover_each_other():
    counts = {1: 5, 2: 6, 3: 40}
    assert publishable_groups(counts=counts, pooled=51, axes=[[1, 2, 3]], threshold=10) == {3}
    counts = {1: 4, 2: 5, 3: 40, 4: 12}
    assert publishable_groups(counts=counts, pooled=61, axes=[[1, 2, 3, 4]], threshold=10) == {3}


def test_groups_nobody_is_in_need_no_cover():
    counts = {1: 0, 2: 0, 3: 40}
    assert publishable_groups(counts=counts, pooled=40, axes=[[1, 2, 3]], threshold=10) == {3}


# --- Figures and counts -------------------------------------------------------------------------------


def test_it_lists_every_entrant_before_any_fit(tournament, study, groups):
    votes_cast(tournament, raters_in(study, YOUNG, count=10))
    board = board_get(dimension=overall(tournament))
    assert board.snapshot is None and board.fitted_at is None and not board.suppressed
    assert {e.slug for e in board.entries} == set(tournament.llm_models.values_list("slug", flat=True))
    assert all(e.rank is None and e.score is None for e in board.entries)
    assert sum(e.battles for e in board.entries) == 2 * 30  # live counts until a fit exists


def test_it_ranks_the_fit_with_counts_matching_the_snapshots_last_vote(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 10, MIDDLE: 10})
    board = board_get(dimension=overall(tournament))
    favourite = tournament.llm_models.order_by("pk").first()
    assert board.entries[0].model_id == favourite.pk and board.entries[0].rank == 1
    assert [e.rank for e in board.entries] == sorted(e.rank for e in board.entries)
    for entry in board.entries:
        assert entry.score_low <= entry.score <= entry.score_high
        assert entry.battles == entry.wins + entry.losses + entry.ties
        assert entry.win_rate == pytest.approx((entry.wins + entry.ties / 2) / entry.battles)
    assert sum(e.wins for e in board.entries) == sum(e.losses for e in board.entries)
    assert sum(e.battles for e in board.entries) == 2 * board.snapshot.votes

    votes_cast(tournament, raters_in(study, YOUNG, count=2), seed=5)  # after the fit: not yet counted
    later = board_get(dimension=overall(tournament))
    assert [(e.model_id, e.battles) for e in later.entries] == [
        (e.model_id, e.battles) for e in board.entries
    ]
    assert later.raters == 20
    fits_publish(tournament_id=tournament.pk)
    refitted = board_get(dimension=overall(tournament))
    assert sum(e.battles for e in refitted.entries) == 2 * (60 + 6) and refitted.raters == 22
    assert refitted.fitted_at >= board.fitted_at and refitted.snapshot != board.snapshot


def test_an_earlier_snapshot_shows_the_board_as_it_was(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 10, MIDDLE: 10})
    first = board_get(dimension=overall(tournament)).snapshot
    votes_cast(tournament, raters_in(study, OLDER, count=10), seed=3)
    fits_publish(tournament_id=tournament.pk)
    as_was = board_get(dimension=overall(tournament), snapshot=first)
    assert as_was.snapshot == first and as_was.raters == 20
    assert sum(e.battles for e in as_was.entries) == 2 * 60
    assert board_get(dimension=overall(tournament), group=group(OLDER), snapshot=first).suppressed
    with pytest.raises(InvalidInput, match="not a fit of the dimension"):
        board_get(dimension=tournament.dimensions.get(slug="trust-safety"), snapshot=first)


def test_it_marks_provisional_and_withdrawn_models_and_keeps_them_listed(tournament, study, groups, settings):
    models = list(tournament.llm_models.order_by("pk"))
    fitted(tournament, study, {YOUNG: 10, MIDDLE: 10})
    tournament.llm_models.remove(models[1])
    LLMModel.objects.filter(pk=models[2].pk).update(disabled_reason="Spend cap reached.")
    newcomer = LLMModel.objects.create(slug="delta", name="Delta", provider="demo", demo_style="terse")
    tournament.llm_models.add(newcomer)
    leader = board_get(dimension=overall(tournament)).entries[0]
    settings.POPULUS_PROVISIONAL_BATTLES = leader.battles
    entries = {e.slug: e for e in board_get(dimension=overall(tournament)).entries}
    assert entries[models[0].slug].status == Status.ACTIVE
    assert entries[models[1].slug].status == Status.WITHDRAWN and entries[models[1].slug].rank is not None
    assert entries[models[2].slug].status == Status.WITHDRAWN
    assert entries["delta"].status == Status.PROVISIONAL and entries["delta"].rank is None
    assert list(entries)[-1] == "delta"  # unranked after ranked
    settings.POPULUS_PROVISIONAL_BATTLES = leader.battles + 1
    assert board_get(dimension=overall(tournament)).entries[0].status == Status.PROVISIONAL


def test_a_model_removed_before_its_first_fit_stays_listed_as_withdrawn(tournament, study, groups):
    models = list(tournament.llm_models.order_by("pk"))
    votes_cast(tournament, raters_in(study, YOUNG, count=10))
    tournament.llm_models.remove(models[2])
    fits_publish(tournament_id=tournament.pk)
    entries = {e.slug: e for e in board_get(dimension=overall(tournament)).entries}
    assert entries[models[2].slug].status == Status.WITHDRAWN and entries[models[2].slug].battles > 0


def test_pair_results_are_kept_both_ways_round(tournament, study, groups):
    votes = votes_cast(tournament, raters_in(study, YOUNG, count=10))
    results = board_pair_results(dimension=overall(tournament))
    battle = Battle.objects.get(vote=votes[0])
    forward, backward = (
        results[(battle.model_a_id, battle.model_b_id)],
        results[(battle.model_b_id, battle.model_a_id)],
    )
    assert (forward.wins, forward.losses, forward.ties) == (backward.losses, backward.wins, backward.ties)
    assert sum(r.battles for r in results.values()) == 2 * 30


def test_a_fit_landing_bumps_the_cache_version(tournament, study, groups):
    before = board_cache_version(tournament_id=tournament.pk)
    assert board_cache_version(tournament_id=tournament.pk) == before
    fitted(tournament, study, {YOUNG: 10})
    assert board_cache_version(tournament_id=tournament.pk) > before


def test_a_lost_cache_version_never_comes_back_as_an_old_number(tournament):
    from django.core.cache import cache

    before = board_cache_version(tournament_id=tournament.pk)
    cache.clear()
    assert board_cache_version(tournament_id=tournament.pk) > before


def test_counts_stored_with_a_fit_equal_those_counted_from_the_votes(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 10, MIDDLE: 9, OLDER: 12}, tie_rate=0.3)
    dimension = overall(tournament)
    snapshot = snapshot_latest(dimension=dimension)
    cutoff = snapshot_cutoff(snapshot)
    assert FitBoardCounts.objects.filter(snapshot=snapshot).count() == 1 + 3  # pooled and each age group
    boards = [None, group(YOUNG), group(MIDDLE), group(OLDER), group("us-ethnicity-asian")]
    stored_pairs = [board_pair_results(dimension=dimension, group=g, up_to_vote_id=cutoff) for g in boards]
    stored_raters = rater_counts(tournament=tournament, dimension=dimension, up_to_vote_id=cutoff)
    FitBoardCounts.objects.all().delete()  # as for a snapshot published before they were stored
    counted_pairs = [board_pair_results(dimension=dimension, group=g, up_to_vote_id=cutoff) for g in boards]
    assert stored_pairs == counted_pairs and stored_pairs[0] and not stored_pairs[-1]
    cache.clear()
    assert rater_counts(tournament=tournament, dimension=dimension, up_to_vote_id=cutoff) == stored_raters
    assert stored_raters.pooled == 31 and stored_raters.by_group[group(OLDER).pk] == 12


def test_pair_results_among_some_models_are_those_pairs_of_the_whole_board(tournament, study, groups):
    fitted(tournament, study, {YOUNG: 10, OLDER: 12}, tie_rate=0.3)
    dimension = overall(tournament)
    cutoff = snapshot_cutoff(snapshot_latest(dimension=dimension))
    two = set(tournament.llm_models.order_by("pk").values_list("pk", flat=True)[:2])
    whole = board_pair_results(dimension=dimension, up_to_vote_id=cutoff)
    expected = {pair: result for pair, result in whole.items() if set(pair) <= two}
    assert board_pair_results(dimension=dimension, up_to_vote_id=cutoff, among=two) == expected
    assert len(expected) == 2
    FitBoardCounts.objects.all().delete()  # the path that counts from the votes
    assert board_pair_results(dimension=dimension, up_to_vote_id=cutoff, among=two) == expected
