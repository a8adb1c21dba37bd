"""The model page and the methodology page (full page and htmx fragment), suppression of small groups
in their tables and charts, and markup that the content security policy lets through untouched."""

import re

import html5lib
import pytest
from django.core.cache import cache
from django.utils import timezone

from leaderboard.boards import boards_site_version_forget
from leaderboard.services import fits_publish
from raters.models import Rater, Study
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import Battle, LLMModel

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_site_version():
    """Each test clears the cache; this process's memo of the boards' version goes with it."""
    boards_site_version_forget()


YOUNG, MIDDLE, OLDER = "us-age-18-34", "us-age-35-54", "us-age-55-plus"
YOUNG_LABEL, MIDDLE_LABEL = "18\u201334", "35\u201354"  # as the groups are labelled, with en dashes


@pytest.fixture
def fitted(tournament, study, groups):
    """Nine middle-aged raters (hidden, with the ten youngest as cover) and twelve aged 55+."""
    for slug, count in ((YOUNG, 10), (MIDDLE, 9), (OLDER, 12)):
        votes_cast(tournament, raters_in(study, slug, count=count), seed=count)
    fits_publish(tournament_id=tournament.pk)
    return tournament


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def favourite(tournament) -> LLMModel:
    return tournament.llm_models.order_by("pk").first()


# --- Model page ---------------------------------------------------------------------------------------


def test_the_model_page_shows_every_dimension_group_and_opponent(client, fitted):
    model = favourite(fitted)
    response = client.get(f"/leaderboard/models/{model.slug}/")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html and 'id="model-detail"' in html
    summary = text_of(re.search(r'data-testid="model-summary".*?</table>', html, re.S).group(0))
    assert re.search(r"Overall winner 1 (\(1\W\d\) )?0\.\d{3} ", summary)  # rank, its interval if any, score
    for dimension in fitted.dimensions.exclude(slug="overall"):
        assert f"{dimension.name} Not enough raters yet" in summary.replace("&amp;", "&")
    head = text_of(re.search(r'data-testid="head-to-head".*?</table>', html, re.S).group(0))
    for opponent in fitted.llm_models.exclude(pk=model.pk):
        assert opponent.name in head
    battles = Battle.objects.filter(vote__isnull=False).filter(model_a=model) | Battle.objects.filter(
        vote__isnull=False, model_b=model
    )
    assert f" {battles.count()} " in summary
    share = battles.count() / Battle.objects.count()
    assert f"{share:.0%}" in summary  # the model's sampling rate


def test_the_model_page_shows_a_group_of_ten_but_not_a_group_of_nine(client, fitted):
    html = client.get(f"/leaderboard/models/{favourite(fitted).slug}/?dimension=overall").content.decode()
    groups = text_of(re.search(r'data-testid="model-groups".*?</table>', html, re.S).group(0))
    assert f"US age {MIDDLE_LABEL} Not enough raters yet" in groups
    assert f"US age {YOUNG_LABEL} Not enough raters yet" in groups  # the cover for the nine
    assert re.search(r"US age 55\+ \d 0\.\d{3}", groups)
    chart = re.search(r'<svg class="chart" id="chart-model-groups".*?</svg>', html, re.S).group(0)
    assert "US age 55+" in chart and MIDDLE_LABEL not in chart and YOUNG_LABEL not in chart


def test_the_model_tabs_swap_only_the_detail_for_htmx(client, fitted):
    model = favourite(fitted)
    url = f"/leaderboard/models/{model.slug}/?tournament=pilot&dimension=overall"
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'data-testid="head-to-head"' in fragment
    assert 'data-testid="model-summary"' not in fragment
    assert (
        f'hx-get="/leaderboard/models/{model.slug}/?tournament=pilot&amp;dimension=trust-safety"' in fragment
    )


def test_a_withdrawn_model_keeps_its_page(client, fitted):
    model = favourite(fitted)
    fitted.llm_models.remove(model)
    html = client.get(f"/leaderboard/models/{model.slug}/").content.decode()
    assert "withdrawn" in html.split("</h1>")[0]


def test_the_model_page_says_what_is_missing(client, fitted):
    assert client.get("/leaderboard/models/nobody/").status_code == 404
    stranger = LLMModel.objects.create(slug="stranger", name="Stranger", provider="demo", demo_style="terse")
    response = client.get(f"/leaderboard/models/{stranger.slug}/")
    assert response.status_code == 404 and b"has not entered any tournament" in response.content
    model = favourite(fitted)
    assert client.get(f"/leaderboard/models/{model.slug}/?tournament=other").status_code == 404
    assert client.get(f"/leaderboard/models/{model.slug}/?dimension=charisma").status_code == 404


# --- Methodology page ---------------------------------------------------------------------------------


def test_the_methodology_page_gives_live_figures(client, fitted):
    excluded = Rater.objects.filter(groups__slug=OLDER).first()
    Rater.objects.filter(pk=excluded.pk).update(status=Rater.Status.EXCLUDED)
    Battle.objects.filter(pk=Battle.objects.first().pk).update(flagged_reason="Model A named itself.")
    fits_publish(tournament_id=fitted.pk)
    html = client.get("/leaderboard/methodology/").content.decode()
    raters = text_of(re.search(r'data-testid="raters-per-group".*?</table>', html, re.S).group(0))
    assert "Age 55+ 11 " in raters  # one of the twelve was excluded
    assert f"Age {MIDDLE_LABEL} fewer than 10" in raters
    assert f"Age {YOUNG_LABEL} withheld to protect a smaller group" in raters
    ties = text_of(re.search(r'data-testid="ties".*?</table>', html, re.S).group(0))
    overall = re.search(r"Overall winner (\d+) (\d+) (\d+)%", ties)
    votes, tie_count = int(overall.group(1)), int(overall.group(2))
    assert votes == 31 * 3 - 3 - 1 and f"{overall.group(3)}%" == f"{tie_count / votes:.0%}"
    assert "not fitted yet" in ties  # dimensions nobody voted on
    qc = text_of(re.search(r'data-testid="qc".*?</p>', html, re.S).group(0))
    assert "excluded by quality control: 1 " in qc and "identity away: 1 " in qc
    for words in ("Thompson sampling", "full covariance", "raked", "never mix with human boards"):
        assert words in html


def test_the_methodology_page_says_which_defences_are_on_and_what_rigging_costs(client, fitted, study):
    from leaderboard.selectors import RIGGING_MEASURED

    study.new_raters_per_network_hour = 7
    study.honeypot = False
    study.practice_battles = 2
    study.save()
    other = Study.objects.create(
        slug="panel-only", name="Panel only", tournament=study.tournament, count_only_reconciled=True
    )
    Study.objects.create(
        slug="one-practice", name="One practice", tournament=study.tournament, allows_open_entry=True
    )
    Rater.objects.filter(pk=Rater.objects.first().pk).update(held_out_at=timezone.now(), held_out_reason="x")
    html = client.get("/leaderboard/methodology/").content.decode()
    defences = text_of(re.search(r'data-testid="defences".*?</ul>', html, re.S).group(0))
    assert "Held out now: 1 " in defences
    assert "judged against their own spread over the models" in defences
    assert "far more networks pushing one model than chance gives stand out" in defences
    assert f"Study {study.name}: open to anyone; at most 7 new raters per network per hour" in defences
    assert "form honeypot off" in defences and "after 5 wrong passwords" in defences
    assert "A published rank rises only past models that overlap it by 25% of" in defences
    assert "first 2 battles practice, not counted" in defences
    assert "each new rater's first battle practice, not counted" in defences  # the one-practice study
    assert "a network that rates less carefully than the rest" in defences
    assert "a proof of effort in the browser (13 zero bits of SHA-256)" in defences
    assert "every rater counts, reconciled with the panel or not" in defences
    assert (
        f"Study {other.name}: panel entries only; form honeypot on; only raters the panel approved "
        "(reconciled from its export) count." in defences
    )
    cost = text_of(re.search(r'data-testid="rigging-cost".*?</p>', html, re.S).group(0))
    assert f"{RIGGING_MEASURED['min_cost_ratio']:.1f}\u00d7" in cost and RIGGING_MEASURED["date"] in cost


def test_the_methodology_page_leaves_out_the_rank_margin_when_it_is_off(client, fitted, settings):
    settings.POPULUS_RANK_MARGIN_PERCENT = 0
    html = client.get("/leaderboard/methodology/").content.decode()
    assert "A published rank rises only past" not in html and "a rank rises from the one" not in html
    settings.POPULUS_RANK_MARGIN_PERCENT = 40
    cache.clear()  # the page is cached until the next fit
    boards_site_version_forget()
    html = client.get("/leaderboard/methodology/").content.decode()
    assert "overlap it by at least 40% of the board" in text_of(html)


def test_the_methodology_fragment_has_no_page_around_it(client, fitted):
    fragment = client.get(
        "/leaderboard/methodology/?tournament=pilot", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "<html" not in fragment and 'data-testid="raters-per-group"' in fragment


def test_the_methodology_page_works_before_any_tournament(client, db):
    assert b"No tournament has been set up yet" in client.get("/leaderboard/methodology/").content


# --- Markup the content security policy accepts ------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/leaderboard/",
        "/leaderboard/?group=us-age-55-plus",
        "/leaderboard/?group=us-age-35-54",
        "/leaderboard/models/alpha-large/",
        "/leaderboard/methodology/",
    ],
)
def test_pages_carry_no_inline_script_or_style(client, fitted, url):
    response = client.get(url)
    assert response.status_code == 200
    document = html5lib.parse(response.content, namespaceHTMLElements=False)
    for element in document.iter():
        assert "style" not in element.attrib, element.tag
        assert not any(name.startswith("on") for name in element.attrib), element.tag
        assert element.tag != "style"
        if element.tag == "script":
            assert element.get("src", "").startswith("/static/") and not (element.text or "").strip()
    assert "unsafe-inline" not in response["Content-Security-Policy"]


def test_every_chart_has_a_title_a_description_and_a_table(client, fitted):
    html = client.get("/leaderboard/?group=us-age-55-plus").content.decode()
    charts = re.findall(r'<svg class="chart" id="([\w-]+)".*?</svg>', html, re.S)
    assert set(charts) == {
        "chart-intervals",
        "chart-win-rates",
        "chart-battles",
        "chart-history",
        "chart-group-ranks",
    }
    for chart_id in charts:
        assert f'<title id="{chart_id}-title">' in html and f'<desc id="{chart_id}-desc">' in html
    for table in ("board", "pairs-table", "history-table", "group-ranks-table"):
        assert f'data-testid="{table}"' in html


def test_the_methodology_page_states_each_rules_measured_error_rates(client):
    import json

    from raters import qc

    figures = json.loads(qc.FIGURES_PATH.read_text())
    html = client.get("/leaderboard/methodology/").content.decode()
    table = html[html.index('data-testid="qc-rates"') :]
    topic = figures["rules"]["topic_wandering"]
    assert "New topic (embedded judge)" in table
    assert f"{100 * topic['legit_nudged']['share']:.1f}%" in table
    assert f"of {topic['legit_struck']['n']}" in table
    for rule in ("Too short", "Random letters", "Copy of an earlier message"):
        assert rule in table


def test_the_llm_judges_measured_rates_get_a_row_of_their_own(tmp_path):
    import json

    from raters import qc
    from raters.selectors import qc_error_rates

    figures = json.loads(qc.FIGURES_PATH.read_text())
    figures["rules"]["topic_wandering"].pop("llm_judge", None)
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(figures))
    assert "llm_topic_judge" not in [row.rule for row in qc_error_rates(path=path)]
    share = {"count": 3, "n": 40, "share": 0.075, "wilson95": [0.026, 0.199]}
    judge = {"model": "Some model", "legit_struck": share, "bad_caught": share, "no_verdict": share}
    figures["rules"]["topic_wandering"]["llm_judge"] = judge
    path.write_text(json.dumps(figures))
    row = qc_error_rates(path=path)[-1]
    assert (row.rule, row.label, row.legit_n, row.struck_pct) == (
        "llm_topic_judge",
        "New topic (LLM judge: Some model)",
        40,
        7.5,
    )


def test_the_error_rates_are_left_out_before_the_bench_ran(tmp_path):
    from raters.selectors import qc_error_rates

    assert qc_error_rates(path=tmp_path / "missing.json") == []
