"""The personal leaderboard: stored posteriors, boards for a profile and weights, privacy, the page."""

import itertools
import random
import re

import numpy as np
import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import personal
from leaderboard.boards import board_cache_bump
from leaderboard.demo_votes import voted_battles_write
from leaderboard.models import FitPosterior, FitScore, FitSnapshot
from leaderboard.services import POSTERIORS_KEPT, fits_publish
from raters.models import Group
from stats.summaries import draws_summary
from tests.leaderboard.board_data import raters_in
from tournaments.models import LLMModel

pytestmark = pytest.mark.django_db

AGES = ["us-age-18-34", "us-age-35-54", "us-age-55-plus"]
ETHNICITIES = ["us-ethnicity-asian", "us-ethnicity-black", "us-ethnicity-white", "us-ethnicity-other"]
POLITICS = ["us-politics-democrat", "us-politics-republican", "us-politics-independent"]
DIMENSIONS = ("overall", "communication", "trust-safety")
OLDEST = "us-age-55-plus"


def favourite(dimension: str, groups: tuple[str, ...]) -> str:
    """Who wins on each dimension: Alpha communicates best, Gamma is the most trusted, and on Overall
    people over 55 prefer Beta where everyone else prefers Alpha."""
    if dimension == "communication":
        return "alpha-large"
    if dimension == "trust-safety":
        return "gamma-instruct"
    return "beta-chat" if OLDEST in groups else "alpha-large"


def battles_voted(tournament, raters_with_groups, *, per_rater: int, seed: int = 0) -> None:
    """Voted battles written straight to the log: on each dimension the favourite wins 90% of its
    battles, and a battle without it is a coin toss (with some ties)."""
    rng = random.Random(seed)
    models = list(tournament.llm_models.order_by("pk"))
    dimension_ids = dict(tournament.dimensions.filter(slug__in=DIMENSIONS).values_list("slug", "pk"))
    plans = []
    for rater, groups in raters_with_groups:
        for _ in range(per_rater):
            model_a, model_b = rng.sample(models, 2)
            outcomes = {}
            for dimension in DIMENSIONS:
                liked = favourite(dimension, groups)
                if rng.random() < 0.05:
                    outcomes[dimension] = "tie"
                elif liked in (model_a.slug, model_b.slug):
                    liked_won = rng.random() < 0.9
                    outcomes[dimension] = "a" if (model_a.slug == liked) == liked_won else "b"
                else:
                    outcomes[dimension] = rng.choice("ab")
            plans.append((rater, model_a, model_b, {dimension_ids[d]: o for d, o in outcomes.items()}))
    voted_battles_write(tournament, plans, pair_probability=1 / 3, seconds_to_vote=60)


def sample_fitted(study, tournament, *, raters_per_cell: int = 2, per_rater: int = 10):
    """US raters in every cell of the three axes, their votes, and a published fit."""
    raters = []
    for cell in itertools.product(AGES, ETHNICITIES, POLITICS):
        raters += [(rater, cell) for rater in raters_in(study, *cell, count=raters_per_cell)]
    battles_voted(tournament, raters, per_rater=per_rater)
    return fits_publish(tournament_id=tournament.pk)


@pytest.fixture
def fitted(study, groups, tournament, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    return tournament


def order(board) -> list[str]:
    return [row.slug for row in board.rows]


def weights(**given) -> dict[str, float]:
    """Only the named dimensions (underscores for hyphens) weighted."""
    return {slug.replace("_", "-"): value for slug, value in given.items()}


# --- Storage ------------------------------------------------------------------------------------------


def test_it_stores_a_posterior_that_reproduces_the_group_boards_within_draw_noise(fitted):
    snapshot = FitSnapshot.objects.get(dimension__slug="overall")
    posterior = personal.posterior_get(snapshot.pk)
    oldest = Group.objects.get(slug=OLDEST)
    draws = personal._cell_draws(snapshot.pk, (oldest.pk,))
    summary = draws_summary(draws.point, draws.draws.astype(float))
    published = {s.model_id: s for s in FitScore.objects.filter(snapshot=snapshot, group=oldest)}
    assert set(published) == set(posterior.model_ids)
    for k, model_id in enumerate(posterior.model_ids):
        score = published[model_id]
        assert summary.point[k] == pytest.approx(score.score, abs=1e-9)
        width = score.score_high - score.score_low
        assert abs(summary.low[k] - score.score_low) < 0.1 * width
        assert abs(summary.high[k] - score.score_high) < 0.1 * width
        assert abs(summary.p_best[k] - score.p_best) < 0.05
    # The pooled board's stored draws are the ones its published scores were summarised from.
    pooled = {s.model_id: s for s in FitScore.objects.filter(snapshot=snapshot, group=None)}
    stored = draws_summary(posterior.pooled.point, posterior.pooled.draws.astype(float))
    for k, model_id in enumerate(posterior.model_ids):
        assert stored.point[k] == pooled[model_id].score
        assert stored.low[k] == pytest.approx(pooled[model_id].score_low, abs=1e-6)
        assert stored.rank[k] == pooled[model_id].rank


def test_it_keeps_posteriors_only_for_the_latest_snapshots(fitted):
    for _ in range(POSTERIORS_KEPT):
        fits_publish(tournament_id=fitted.pk)
    overall = FitSnapshot.objects.filter(dimension__slug="overall").order_by("-created_at", "-pk")
    assert overall.count() == POSTERIORS_KEPT + 1
    kept = set(FitPosterior.objects.filter(snapshot__dimension__slug="overall").values_list("pk", flat=True))
    assert kept == set(list(overall.values_list("pk", flat=True))[:POSTERIORS_KEPT])
    assert FitScore.objects.filter(snapshot=overall.last()).exists()  # published scores are never pruned


# --- The board ----------------------------------------------------------------------------------------


def test_a_profile_whose_group_prefers_another_model_reranks_the_board(fitted):
    everyone_else = personal.personal_board(
        tournament=fitted, weights=weights(overall=10), profile={"age": "us-age-18-34"}, country="US"
    )
    oldest = personal.personal_board(
        tournament=fitted, weights=weights(overall=10), profile={"age": OLDEST}, country="US"
    )
    assert order(everyone_else)[0] == "alpha-large"
    assert order(oldest)[0] == "beta-chat"
    assert [g.slug for g in oldest.profile] == [OLDEST]
    beta = oldest.rows[0]
    assert beta.score_low <= beta.score <= beta.score_high
    assert beta.rank_low <= beta.rank_high
    assert beta.p_best > 0.5
    assert sum(row.p_best for row in oldest.rows) == pytest.approx(1.0)
    # The pooled board (post-stratified; most of the population is under 55) puts Alpha ahead.
    assert beta.pooled_rank > beta.rank
    assert any("Ranks higher for people like you" in line for line in beta.report.lines)


def test_weights_change_the_ranking(fitted):
    talk = personal.personal_board(
        tournament=fitted, weights=weights(communication=10), profile={}, country=None
    )
    trust = personal.personal_board(
        tournament=fitted, weights=weights(trust_safety=10), profile={}, country=None
    )
    mixed = personal.personal_board(
        tournament=fitted, weights=weights(communication=2, trust_safety=8), profile={}, country=None
    )
    assert order(talk)[0] == "alpha-large"
    assert order(trust)[0] == "gamma-instruct"
    assert order(mixed)[0] == "gamma-instruct"
    shares = {w.dimension.slug: w.share for w in mixed.weights}
    assert shares["communication"] == pytest.approx(0.2) and shares["trust-safety"] == pytest.approx(0.8)
    assert shares["overall"] == 0


def test_the_fit_report_says_where_a_top_model_is_strong_and_weak(fitted):
    board = personal.personal_board(
        tournament=fitted, weights=weights(communication=5, trust_safety=5), profile={}, country=None
    )
    alpha = next(row for row in board.rows if row.slug == "alpha-large")
    gamma = next(row for row in board.rows if row.slug == "gamma-instruct")
    assert alpha.report.strongest.dimension.slug == "communication"
    assert alpha.report.weakest.dimension.slug == "trust-safety"
    assert gamma.report.strongest.dimension.slug == "trust-safety"
    assert "Top on Communication style & presentation with no profile given." in alpha.report.lines
    assert all(row.report is not None for row in board.rows[: personal.REPORTED_MODELS])


def test_equal_proportions_give_the_same_board(fitted):
    small = personal.personal_board(
        tournament=fitted, weights=weights(overall=1, communication=1), profile={}, country=None
    )
    large = personal.personal_board(
        tournament=fitted, weights=weights(overall=9, communication=9), profile={}, country=None
    )
    assert [(r.slug, r.score, r.score_low) for r in small.rows] == [
        (r.slug, r.score, r.score_low) for r in large.rows
    ]


def test_a_group_with_too_few_raters_is_left_out_with_a_note(study, groups, tournament, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    settings.POPULUS_MIN_GROUP_RATERS = 30  # every age group has 24 raters; the tournament 72
    board_cache_bump(tournament_id=tournament.pk)  # publishable groups are cached per board version
    dropped = personal.personal_board(
        tournament=tournament, weights=weights(overall=10), profile={"age": OLDEST}, country="US"
    )
    baseline = personal.personal_board(
        tournament=tournament, weights=weights(overall=10), profile={}, country="US"
    )
    assert dropped.profile == () and [g.slug for g in dropped.profile_given] == [OLDEST]
    assert "Not enough raters in United States · Age 55+ yet; showing the board without it." in dropped.notes
    assert [(r.slug, r.score) for r in dropped.rows] == [(r.slug, r.score) for r in baseline.rows]
    assert order(dropped)[0] == "alpha-large"


def test_nothing_is_shown_while_the_pooled_board_is_suppressed(study, groups, tournament, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    settings.POPULUS_MIN_GROUP_RATERS = 100
    board_cache_bump(tournament_id=tournament.pk)
    board = personal.personal_board(tournament=tournament, weights={}, profile={}, country=None)
    assert board.suppressed and board.rows == ()


def test_it_works_when_no_rater_has_a_group(study, groups, tournament, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    battles_voted(tournament, [(rater, ()) for rater in raters_in(study, count=12)], per_rater=10)
    fits_publish(tournament_id=tournament.pk)
    board = personal.personal_board(
        tournament=tournament, weights=weights(overall=10), profile={}, country=None
    )
    assert order(board)[0] == "alpha-large"


def test_bad_input_is_named_and_replaced_by_defaults(fitted):
    board = personal.personal_board(
        tournament=fitted,
        weights={"overall": "lots", "communication": "99", "charisma": "3", "trust-safety": "nan"},
        profile={"age": "us-age-99", "politics": "uk-politics-green", "ethnicity": "us-politics-democrat"},
        country="US",
    )
    problems = " ".join(board.problems)
    assert "no dimension called 'charisma'" in problems
    assert "The weight for Overall winner must be a number from 0 to 10, not 'lots'; using 5." in problems
    assert "not '99'" in problems and "not 'nan'" in problems
    assert "There is no group called 'us-age-99'" in problems
    assert "'Green' (uk-politics-green) is not a group in United States" in problems
    assert "'Democrat' is not an answer to ethnicity" in problems
    assert board.profile == () and board.ranked
    assert {w.dimension.slug: w.weight for w in board.weights if w.weight} == {
        "overall": 5,
        "communication": 5,
        "trust-safety": 5,
    }


def test_unfitted_dimensions_and_all_zero_weights_are_explained(fitted):
    board = personal.personal_board(
        tournament=fitted, weights={"overall": 0, "communication": 0}, profile={}, country=None
    )
    assert "Every weight is 0; using equal weights." in board.problems
    assert "Core task performance & reasoning has no fitted board yet; it is left out." in board.notes
    assert sum(w.share for w in board.weights) == pytest.approx(1.0)


def test_a_model_new_to_the_tournament_is_listed_unranked(fitted):
    first = fitted.llm_models.first()
    newcomer = LLMModel.objects.create(
        slug="delta-new",
        name="Delta New",
        maker="Delta",
        provider=first.provider,
        base_url=first.base_url,
        api_model="model-x4",
    )
    fitted.llm_models.add(newcomer)
    board = personal.personal_board(tournament=fitted, weights=weights(overall=1), profile={}, country=None)
    assert board.rows[-1].slug == "delta-new" and board.rows[-1].rank is None


def test_results_are_cached_per_normalised_query_and_board_version(fitted, settings):
    client = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])

    def cached_boards() -> int:
        return len(list(client.scan_iter(match=f"*populus:personal:{fitted.pk}:*")))

    for scale in (1, 2, 5):  # the same proportions, spelled three ways
        personal.personal_board(
            tournament=fitted, weights=weights(overall=scale, communication=scale), profile={}, country=None
        )
    assert cached_boards() == 1
    personal.personal_board(tournament=fitted, weights=weights(overall=1), profile={}, country=None)
    assert cached_boards() == 2
    board_cache_bump(tournament_id=fitted.pk)
    personal.personal_board(tournament=fitted, weights=weights(overall=1), profile={}, country=None)
    assert cached_boards() == 3


# --- The page -----------------------------------------------------------------------------------------


URL = "/leaderboard/personal/"


def table_models(html: str) -> list[str]:
    return re.findall(r'<tr data-model="([^"]+)">', html)


def test_the_page_ranks_for_the_profile_in_the_address(client, fitted):
    html = client.get(
        URL, {"country": "US", "age": OLDEST, "w-overall": "10", "w-communication": "0"}
    ).content.decode()
    assert table_models(html)[0] == "beta-chat"
    assert 'value="us-age-55-plus" selected' in html
    assert 'name="w-overall" min="0" max="10" step="1"\n               value="10"' in html
    assert "For people like you: age 55+ (United States)." in html
    assert "How the top models fit you" in html


def test_the_address_round_trips_to_the_same_board(client, fitted):
    response = client.get(
        URL,
        {"w-overall": "4", "w-communication": "6", "age": OLDEST, "country": "us"},
        HTTP_HX_REQUEST="true",
    )
    canonical = response["HX-Push-Url"]
    assert canonical.startswith(URL + "?tournament=pilot&country=US&age=us-age-55-plus&w-core-task=0")
    assert "w-overall=4&w-communication=6" not in canonical  # dimension order, not the order given
    again = client.get(canonical, HTTP_HX_REQUEST="true")
    assert again["HX-Push-Url"] == canonical
    assert table_models(again.content.decode()) == table_models(response.content.decode())


def test_the_page_swaps_only_the_results_for_htmx(client, fitted):
    full = client.get(URL, {"w-overall": "10"}).content.decode()
    fragment = client.get(
        URL, {"w-overall": "10"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="personal-results"
    ).content.decode()
    assert "<html" in full and 'id="personal-form"' in full
    assert "<html" not in fragment and 'id="personal-form"' not in fragment
    assert 'data-testid="personal-board"' in fragment
    assert table_models(fragment) == table_models(full)
    # A new country brings new questions: htmx then asks for the whole page and picks the section.
    page = client.get(URL, {"country": "UK"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="personal-page")
    assert 'id="personal-form"' in page.content.decode() and 'name="politics"' in page.content.decode()


def test_bad_input_still_renders_the_page_with_a_clear_message(client, fitted):
    response = client.get(URL, {"tournament": "nope", "w-overall": "-3", "age": "us-age-99", "country": "ZZ"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "There is no tournament called &#x27;nope&#x27;; showing the newest instead." in html
    assert "must be a number from 0 to 10, not &#x27;-3&#x27;" in html
    assert "There is no country with the code &#x27;ZZ&#x27;." in html
    long = client.get(URL, {"w-overall": "9" * 500}).content.decode()
    assert "not &#x27;" + "9" * 40 + "…&#x27;" in long and "9" * 41 not in long
    assert 'data-testid="personal-board"' in html


def test_the_page_without_a_profile_says_it_is_not_the_pooled_board(client, fitted):
    html = client.get(URL).content.decode()
    assert "No profile given." in html
    assert "not the\n  post-stratified pooled board" in html


def test_the_page_says_weighted_dimensions_are_combined_as_independent(client, fitted):
    combined = client.get(URL, {"w-overall": "4", "w-communication": "6"}).content.decode()
    assert "treats their\n  uncertainties as independent" in combined
    single = client.get(URL, {"w-overall": "10", "w-communication": "0", "w-core-task": "0"}).content.decode()
    assert "uncertainties as independent" not in single


def test_the_page_stores_nothing_about_the_visitor(client, fitted):
    personal.personal_board(tournament=fitted, weights={}, profile={}, country=None)  # warm the caches
    with CaptureQueriesContext(connection) as queries:
        full = client.get(URL, {"country": "US", "age": OLDEST})
        fragment = client.get(
            URL, {"w-overall": "3"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="personal-results"
        )
    writes = [q["sql"] for q in queries if re.match(r"\s*(INSERT|UPDATE|DELETE)", q["sql"], re.I)]
    assert writes == []
    for response in (full, fragment):
        assert response.status_code == 200
        assert not response.cookies  # no session, no CSRF cookie
        assert "Set-Cookie" not in response


def test_the_page_says_when_there_is_no_tournament(client, db):
    assert b"No tournament has been set up yet" in client.get(URL).content


def test_the_nav_links_to_the_page(client, fitted):
    assert f'href="{URL}"' in client.get("/leaderboard/").content.decode()


def test_scores_are_expected_points_in_range(fitted):
    board = personal.personal_board(tournament=fitted, weights={}, profile={"age": OLDEST}, country="US")
    scores = np.array([row.score for row in board.rows])
    assert ((scores > 0) & (scores < 1)).all()
    assert scores.mean() == pytest.approx(0.5, abs=1e-9)  # expected points against the field average 1/2
