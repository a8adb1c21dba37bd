"""The style-controlled view on the site: the leaderboard toggle, the board API, downloads, the
methodology page's coefficients and the model page's moves."""

import csv
import io

import pytest

from leaderboard.models import FitScore, FitSnapshot
from leaderboard.services import fits_publish
from tests.leaderboard.test_style_fits import styled_sample  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(styled_sample, tournament):  # noqa: F811
    fits_publish(tournament_id=tournament.pk)
    return FitSnapshot.objects.get(dimension__slug="overall")


def test_it_toggles_the_leaderboard_between_the_two_views_and_keeps_the_state_in_the_url(client, published):
    controlled = {
        s.model.name: s
        for s in FitScore.objects.filter(snapshot=published, group=None, style_controlled=True)
    }
    default = {
        s.model.name: s
        for s in FitScore.objects.filter(snapshot=published, group=None, style_controlled=False)
    }
    page = client.get("/leaderboard/?tournament=pilot&dimension=overall&style=controlled").content.decode()
    assert 'value="controlled" checked' in page
    assert 'data-testid="style-note"' in page
    assert "style=controlled" in page  # the dimension tabs keep the view
    for score in controlled.values():
        assert f"{score.score:.3f}" in page
    plain = client.get("/leaderboard/?tournament=pilot&dimension=overall").content.decode()
    assert 'value="" checked' in plain and 'data-testid="style-note"' not in plain
    favourite = max(default, key=lambda name: default[name].score)
    assert f"{default[favourite].score:.3f}" in plain
    fragment = client.get(
        "/leaderboard/?tournament=pilot&dimension=overall&style=controlled", headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in fragment and 'value="controlled" checked' in fragment
    assert client.get("/leaderboard/?tournament=pilot&style=sideways").status_code == 404


def test_it_serves_both_views_from_the_board_api_and_in_the_downloads(client, published):
    controlled = client.get("/api/v1/boards/?tournament=pilot&dimension=overall&style=controlled").json()
    default = client.get("/api/v1/boards/?tournament=pilot&dimension=overall").json()
    assert controlled["style_controlled"] is True and default["style_controlled"] is False
    stored = {
        s.model.slug: s.score
        for s in FitScore.objects.filter(snapshot=published, group=None, style_controlled=True)
    }
    assert {e["slug"]: e["score"] for e in controlled["entries"]} == pytest.approx(stored)
    coefficients = {c["feature"]: c for c in controlled["snapshot"]["style"]}
    assert (
        coefficients["length"]["low"] <= coefficients["length"]["estimate"] <= coefficients["length"]["high"]
    )
    assert client.get("/api/v1/boards/?tournament=pilot&style=sideways").status_code == 400
    rows = list(
        csv.DictReader(io.StringIO(client.get("/api/v1/tournaments/pilot/boards.csv").content.decode()))
    )
    assert {row["style"] for row in rows} == {"default", "controlled"}
    pooled_controlled = [
        r for r in rows if r["style"] == "controlled" and r["dimension"] == "overall" and not r["group"]
    ]
    assert {r["model"]: float(r["score"]) for r in pooled_controlled} == pytest.approx(stored)
    boards = client.get("/api/v1/tournaments/pilot/boards.json").json()
    assert {b["style_controlled"] for b in boards} == {True, False}


def test_it_shows_the_coefficients_by_group_and_each_models_move(client, published, styled_sample):  # noqa: F811
    page = client.get("/leaderboard/methodology/?tournament=pilot").content.decode()
    assert 'id="chart-style-overall"' in page
    assert 'data-testid="style-table-overall"' in page
    length = next(c for c in published.style["coefficients"] if c["feature"] == "length")
    assert f"{length['estimate']:.3f}" in page
    favourite = styled_sample[0]
    default = FitScore.objects.get(snapshot=published, group=None, style_controlled=False, model=favourite)
    controlled = FitScore.objects.get(snapshot=published, group=None, style_controlled=True, model=favourite)
    model_page = client.get(f"/leaderboard/models/{favourite.slug}/?tournament=pilot").content.decode()
    shift = controlled.score - default.score
    assert f"{'+' if shift >= 0 else ''}{shift:.3f}" in model_page
