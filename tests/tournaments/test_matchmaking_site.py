"""Matchmaking on the site: ready queues in Redis, per-rater rules, recorded probabilities."""

import random
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone
from scipy.stats import chisquare

from config.errors import SessionEnded
from raters.models import Rater
from tests.conftest import admitted_rater
from tournaments import matchmaking
from tournaments.matchmaking import Slot, pair_choose, pair_key, queue_key, queue_refill, redis_client
from tournaments.models import Battle, LLMModel
from tournaments.services import battle_start

pytestmark = pytest.mark.django_db


def add_models(tournament, count: int) -> list[LLMModel]:
    template = tournament.llm_models.first()
    extra = []
    for index in range(count):
        model = LLMModel.objects.create(
            slug=f"extra-{index}",
            name=f"Extra {index}",
            maker="Extra",
            provider=template.provider,
            base_url=template.base_url,
            api_model=f"extra-{index}",
        )
        tournament.llm_models.add(model)
        extra.append(model)
    return extra


def put_slot(tournament, group_id, probabilities: dict, pick) -> None:
    slot = Slot(probabilities=probabilities, pick=pick, made_at=time.time())
    redis_client().rpush(queue_key(tournament.pk, group_id), slot.to_json())


def pooled_only(rater: Rater) -> Rater:
    """A rater who feeds only the pooled board, so one queue decides their pair."""
    rater.groups.clear()
    return rater


def model_pks(tournament) -> list[int]:
    return sorted(tournament.llm_models.values_list("pk", flat=True))


def uncapped(tournament):
    """No cap on the mixture: these tests read the slots' own probabilities."""
    tournament.matchmaking_pair_cap = 1.0
    tournament.save(update_fields=["matchmaking_pair_cap"])
    return tournament


def test_the_battle_records_the_probability_of_its_ordered_pair(rater, tournament):
    a, b, c = model_pks(uncapped(tournament))
    offered = {(a, b): 0.6, (a, c): 0.3, (b, c): 0.1}
    put_slot(tournament, None, offered, pick=(a, b))
    battle = battle_start(rater=pooled_only(rater))
    assert battle.pair_probability == pytest.approx(
        offered[pair_key(battle.model_a_id, battle.model_b_id)] / 2
    )


def test_a_pair_the_rater_met_is_removed_and_the_rest_renormalised(rater, tournament):
    a, b, c = model_pks(uncapped(tournament))
    pooled_only(rater)
    Battle.objects.create(
        tournament=tournament,
        rater=rater,
        model_a_id=a,
        model_b_id=b,
        pair_probability=0.5,
        state=Battle.State.VOID,
    )
    put_slot(tournament, None, {(a, b): 0.6, (a, c): 0.3, (b, c): 0.1}, pick=(a, b))
    battle = battle_start(rater=rater)
    pair = pair_key(battle.model_a_id, battle.model_b_id)
    assert pair != (a, b)
    assert battle.pair_probability == pytest.approx({(a, c): 0.75, (b, c): 0.25}[pair] / 2)


def test_the_probability_averages_over_the_boards_the_rater_feeds(rater, tournament):
    a, b, c = model_pks(uncapped(tournament))
    group_ids = list(rater.groups.values_list("pk", flat=True))
    pooled = {(a, b): 0.5, (a, c): 0.25, (b, c): 0.25}
    grouped = {(a, b): 0.2, (a, c): 0.4, (b, c): 0.4}
    put_slot(tournament, None, pooled, pick=(a, b))
    for group_id in group_ids:
        put_slot(tournament, group_id, grouped, pick=(a, b))
    battle = battle_start(rater=rater)
    pair = pair_key(battle.model_a_id, battle.model_b_id)
    boards = 1 + len(group_ids)
    assert battle.pair_probability == pytest.approx(
        (pooled[pair] + grouped[pair] * len(group_ids)) / boards / 2
    )


def test_no_pair_takes_more_than_the_tournament_cap_and_the_excess_goes_to_the_others(
    rater, tournament, monkeypatch
):
    monkeypatch.setattr(matchmaking, "_random", random.Random(5))
    add_models(tournament, 7)  # ten models, 45 pairs: the default cap of 5% applies as it is
    pks = model_pks(tournament)
    pairs = [(x, y) for x in pks for y in pks if x < y]
    leaders = pairs[0]
    offered = {pair: 0.5 if pair == leaders else 0.5 / 44 for pair in pairs}
    available = list(tournament.llm_models.all())
    drawn = Counter()
    for _ in range(300):
        put_slot(tournament, None, offered, pick=leaders)
        left, right, probability = pair_choose(rater=pooled_only(rater), available=available, met=set())
        pair = pair_key(left.pk, right.pk)
        drawn[pair] += 1
        other = 0.5 / 44 * 0.95 / 0.5  # the others share the excess in proportion to what they had
        assert probability == pytest.approx((0.05 if pair == leaders else other) / 2)
    assert drawn[leaders] <= 30  # 15 expected; uncapped, about 150

    uncapped(tournament)
    rater.study.tournament.refresh_from_db()
    put_slot(tournament, None, offered, pick=leaders)
    left, right, probability = pair_choose(rater=rater, available=available, met=set())
    assert probability == pytest.approx(offered[pair_key(left.pk, right.pk)] / 2)  # 0.25 for the leaders


def test_a_tournament_of_few_models_keeps_room_to_steer(rater, tournament):
    a, b, c = model_pks(tournament)  # three pairs: a cap of 5% would make them even
    put_slot(tournament, None, {(a, b): 0.8, (a, c): 0.1, (b, c): 0.1}, pick=(a, b))
    battle = battle_start(rater=pooled_only(rater))
    share = {(a, b): 1.4 / 3, (a, c): (1 - 1.4 / 3) / 2, (b, c): (1 - 1.4 / 3) / 2}
    assert battle.pair_probability == pytest.approx(share[pair_key(battle.model_a_id, battle.model_b_id)] / 2)


def test_starting_a_battle_takes_one_slot_from_the_queue(rater, tournament):
    queue_refill(tournament_id=tournament.pk, group_id=None)
    key = queue_key(tournament.pk, None)
    before = redis_client().llen(key)
    battle_start(rater=pooled_only(rater))
    assert redis_client().llen(key) == before - 1


def test_the_refill_counts_queued_slots_as_in_flight_so_arrivals_spread(tournament):
    add_models(tournament, 7)  # ten models, 45 pairs
    queue_refill(tournament_id=tournament.pk, group_id=None)
    slots = [Slot.from_json(raw) for raw in redis_client().lrange(queue_key(tournament.pk, None), 0, -1)]
    assert len(slots) == matchmaking.QUEUE_DEPTH
    picks = Counter(slot.pick for slot in slots)
    assert max(picks.values()) <= 3, picks
    assert len(picks) >= 20


def test_a_battle_still_starts_when_redis_lost_the_queues(rater, tournament):
    queue_refill(tournament_id=tournament.pk, group_id=None)
    client = redis_client()
    client.delete(*client.scan_iter(match="populus:matchmaking:*"))
    battle = battle_start(rater=rater)
    assert 0 < battle.pair_probability <= 0.5


def test_a_battle_still_starts_when_redis_is_unreachable(rater, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    matchmaking.redis_client.cache_clear()
    try:
        battle = battle_start(rater=rater)
    finally:
        matchmaking.redis_client.cache_clear()
    assert 0 < battle.pair_probability <= 0.5


def test_a_cooled_down_model_is_never_offered_even_from_slots_made_before(study, groups, tournament):
    queue_refill(tournament_id=tournament.pk, group_id=None)
    cooled = tournament.llm_models.first()
    LLMModel.objects.filter(pk=cooled.pk).update(cooldown_until=timezone.now() + timedelta(minutes=5))
    for _ in range(15):
        battle = battle_start(rater=admitted_rater(study))
        assert cooled.pk not in (battle.model_a_id, battle.model_b_id)


def test_a_rater_never_meets_a_pair_twice_and_is_done_when_every_pair_is_met(rater, tournament):
    met = []
    for _ in range(3):  # three models make three pairs
        battle = battle_start(rater=rater)
        met.append(pair_key(battle.model_a_id, battle.model_b_id))
        Battle.objects.filter(pk=battle.pk).update(state=Battle.State.VOID)
    assert len(set(met)) == 3
    with pytest.raises(SessionEnded, match="every pair"):
        battle_start(rater=rater)
    rater.refresh_from_db()
    assert rater.status == Rater.Status.COMPLETED


def test_left_and_right_are_balanced(rater, tournament, monkeypatch):
    # A seeded source instead of the OS's, so that the chi-square test cannot fail by chance.
    monkeypatch.setattr(matchmaking, "_random", random.Random(7))
    a, b, c = model_pks(tournament)
    available = list(tournament.llm_models.all())
    on_the_left = Counter()
    uncapped(tournament)
    for _ in range(600):
        put_slot(tournament, None, {(a, b): 1.0, (a, c): 0.0, (b, c): 0.0}, pick=(a, b))
        left, _right, _ = pair_choose(rater=pooled_only(rater), available=available, met=set())
        on_the_left[left.pk] += 1
    assert set(on_the_left) == {a, b}
    assert chisquare([on_the_left[a], on_the_left[b]]).pvalue > 0.01


def test_the_periodic_refill_fills_every_board_an_admitted_rater_feeds(rater, tournament):
    assert matchmaking.queues_refill_all() > 0
    boards = [None, *rater.groups.values_list("pk", flat=True)]
    for group_id in boards:
        assert redis_client().llen(queue_key(tournament.pk, group_id)) == matchmaking.QUEUE_DEPTH


def test_stale_slots_are_not_used(rater, tournament):
    a, b, _c = model_pks(tournament)
    stale = Slot(probabilities={(a, b): 1.0}, pick=(a, b), made_at=time.time() - 3600)
    redis_client().rpush(queue_key(tournament.pk, None), stale.to_json())
    _left, _right, probability = pair_choose(
        rater=pooled_only(rater), available=list(tournament.llm_models.all()), met=set()
    )
    assert probability < 0.5  # the stale slot alone would have made (a, b) certain: 1/2 as an ordered pair


def test_the_boards_a_rater_feeds_are_chosen_and_weighed_by_what_each_still_needs(
    rater, tournament, monkeypatch
):
    monkeypatch.setattr(matchmaking, "_random", random.Random(11))
    a, b, c = model_pks(uncapped(tournament))
    group_id = rater.groups.values_list("pk", flat=True).first()
    rater.groups.set([group_id])  # the pooled board and one group board
    available = list(tournament.llm_models.all())
    pooled = {(a, b): 0.8, (a, c): 0.1, (b, c): 0.1}
    grouped = {(a, b): 0.1, (a, c): 0.1, (b, c): 0.8}
    picks = Counter()
    for _ in range(400):
        redis_client().delete(queue_key(tournament.pk, None), queue_key(tournament.pk, group_id))
        redis_client().rpush(
            queue_key(tournament.pk, None), Slot(pooled, (a, b), time.time(), need=0.5).to_json()
        )
        redis_client().rpush(
            queue_key(tournament.pk, group_id), Slot(grouped, (b, c), time.time(), need=1.5).to_json()
        )
        left, right, probability = pair_choose(rater=rater, available=available, met=set())
        pair = pair_key(left.pk, right.pk)
        picks[pair] += 1
        want = {(a, b): 0.25 * 0.8 + 0.75 * 0.1, (a, c): 0.1, (b, c): 0.25 * 0.1 + 0.75 * 0.8}
        assert probability == pytest.approx(want[pair] / 2)
    # The group board needs three times more, so its favourite pair comes first.
    assert picks[(b, c)] / 400 == pytest.approx(want[(b, c)], abs=0.07)
    assert picks[(a, b)] / 400 == pytest.approx(want[(a, b)], abs=0.07)


def test_an_all_ties_dimension_needs_little_and_the_tournament_weights_count(study, groups, tournament):
    from tests.leaderboard.board_data import raters_in, votes_cast

    young = raters_in(study, "us-age-18-34", count=12)
    votes_cast(tournament, young, per_rater=4, tie_rate=0.1, seed=1)
    votes_cast(tournament, young, per_rater=4, tie_rate=1.0, dimensions=("trust-safety",), seed=2)
    dimensions = [d.slug for d in tournament.dimensions.all()]
    needs = dict(
        zip(dimensions, (need for _, need in matchmaking.board_parts(tournament, None)), strict=True)
    )
    # Trust is as far from an announced leader as a dimension with no votes (core-task), but its battles
    # teach next to nothing, so it asks for next to nothing; Overall is nearly settled.
    assert needs["trust-safety"] < 0.1 * needs["core-task"], needs
    assert needs["overall"] < 0.2 * needs["core-task"], needs
    slot = matchmaking.slots_make(tournament, None, 1)[0]
    assert slot.need == pytest.approx(sum(needs.values()))
    assert sum(slot.probabilities.values()) == pytest.approx(1.0)

    tournament.matchmaking_weight_leader = 0
    tournament.matchmaking_weight_intervals = 0
    tournament.matchmaking_weight_raters = 0
    tournament.save()
    assert all(need == 0 for _, need in matchmaking.board_parts(tournament, None))
