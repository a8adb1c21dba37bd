import pytest
import trueskill

from leaderboard.models import AppliedVote, Rating
from leaderboard.services import ratings_apply_pending, ratings_apply_vote
from stats.trueskill import TrueSkillParams, rate_outcome
from tests.helpers import voted_battle

pytestmark = pytest.mark.django_db


def snapshot():
    fields = ["dimension_id", "group_id", "model_id", "mu", "sigma", "wins", "losses", "ties"]
    return list(Rating.objects.order_by("pk").values_list(*fields))


def test_it_rates_every_dimension_for_the_pool_and_each_of_the_raters_groups(rater):
    battle, vote = voted_battle(rater, outcome="a", trust_safety="tie")
    assert ratings_apply_vote(vote_id=vote.pk) is True
    populations = [None, *rater.groups.values_list("pk", flat=True)]
    assert len(populations) == 4
    assert Rating.objects.count() == 5 * len(populations) * 2
    for group_id in populations:
        overall = {r.model_id: r for r in Rating.objects.filter(dimension__slug="overall", group_id=group_id)}
        winner, loser = overall[battle.model_a_id], overall[battle.model_b_id]
        assert winner.mu > TrueSkillParams().mu > loser.mu
        assert (winner.wins, loser.losses) == (1, 1)
        trust = {
            r.model_id: r for r in Rating.objects.filter(dimension__slug="trust-safety", group_id=group_id)
        }
        assert trust[battle.model_a_id].ties == 1 and trust[battle.model_a_id].sigma < TrueSkillParams().sigma


def test_it_applies_a_vote_exactly_once(rater):
    _, vote = voted_battle(rater)
    ratings_apply_vote(vote_id=vote.pk)
    before = snapshot()
    assert ratings_apply_vote(vote_id=vote.pk) is False
    assert ratings_apply_pending() == 0
    assert snapshot() == before
    assert AppliedVote.objects.count() == 1


def test_it_matches_the_trueskill_package_with_the_tournaments_parameters(rater, tournament):
    tournament.trueskill_mu, tournament.trueskill_sigma = 1500.0, 350.0
    tournament.trueskill_beta, tournament.trueskill_tau = 200.0, 3.0
    tournament.save()
    battle, vote = voted_battle(rater, outcome="b")
    ratings_apply_vote(vote_id=vote.pk)
    env = trueskill.TrueSkill(mu=1500.0, sigma=350.0, beta=200.0, tau=3.0, draw_probability=0.10)
    expected_b, expected_a = trueskill.rate_1vs1(env.create_rating(), env.create_rating(), env=env)
    pooled = {r.model_id: r for r in Rating.objects.filter(dimension__slug="overall", group=None)}
    assert pooled[battle.model_a_id].mu == pytest.approx(expected_a.mu, abs=1e-6)
    assert pooled[battle.model_b_id].sigma == pytest.approx(expected_b.sigma, abs=1e-6)


def test_it_applies_pending_votes_in_vote_order(rater, study):
    from tests.conftest import admitted_rater

    votes = [voted_battle(rater, outcome="a")[1]]
    other = admitted_rater(study)
    votes.append(voted_battle(other, outcome="b")[1])
    assert ratings_apply_pending(up_to_vote_id=votes[0].pk) == 1
    assert ratings_apply_pending() == 1
    in_order = snapshot()
    Rating.objects.all().delete()
    AppliedVote.objects.all().delete()
    for vote in reversed(votes):
        ratings_apply_vote(vote_id=vote.pk)
    assert snapshot() != in_order  # order matters to TrueSkill, which is why one writer applies in order


def test_rate_outcome_treats_b_as_the_mirror_of_a():
    a, b = (27.0, 5.0), (23.0, 7.0)
    params = TrueSkillParams(draw_probability=0.3)
    new_a, new_b = rate_outcome(a, b, outcome="b", params=params)
    mirror_b, mirror_a = rate_outcome(b, a, outcome="a", params=params)
    assert new_a == pytest.approx(mirror_a) and new_b == pytest.approx(mirror_b)
