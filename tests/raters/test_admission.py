from datetime import timedelta

import pytest
from django.utils import timezone

from config.errors import InvalidInput
from raters.models import Country, Group, Quota, QuotaSlot, Rater
from raters.services import (
    PendingEntry,
    quota_set,
    quota_target_update,
    quotas_apply_census_preset,
    rater_admit,
    rater_complete_if_done,
    rater_create,
    rater_screen,
)
from tests.conftest import admitted_rater
from tests.helpers import voted_battle
from tournaments.sessions import raters_release_abandoned

pytestmark = pytest.mark.django_db

US_OLDER_WHITE_REPUBLICAN = {
    "age": "us-age-55-plus",
    "ethnicity": "us-ethnicity-white",
    "politics": "us-politics-republican",
}


def groups_named(*slugs: str) -> list[Group]:
    return [Group.objects.select_related("axis__country").get(slug=slug) for slug in slugs]


def test_it_admits_everyone_from_a_sampled_country_when_there_are_no_quotas(rater):
    assert rater.status == Rater.Status.ADMITTED
    assert rater.admitted_at is not None


def test_it_fills_a_marginal_quota_and_then_says_it_is_full(study, groups):
    quota = quota_set(study=study, groups=groups_named("us-age-18-34"), target=2)
    statuses = [admitted_rater(study).status for _ in range(3)]
    assert statuses == [Rater.Status.ADMITTED, Rater.Status.ADMITTED, Rater.Status.QUOTA_FULL]
    quota.refresh_from_db()
    assert quota.admitted == 2
    assert QuotaSlot.objects.filter(quota=quota).count() == 2


def test_it_leaves_other_groups_open(study, groups):
    quota_set(study=study, groups=groups_named("us-age-18-34"), target=0)
    quota_set(study=study, groups=groups_named("us-age-55-plus"), target=1)
    assert admitted_rater(study).status == Rater.Status.QUOTA_FULL
    assert admitted_rater(study, answers=US_OLDER_WHITE_REPUBLICAN).status == Rater.Status.ADMITTED


def test_it_fills_interlocking_cells_and_treats_a_missing_cell_as_closed(study, groups):
    cell = quota_set(study=study, groups=groups_named("us-age-18-34", "us-ethnicity-asian"), target=1)
    assert admitted_rater(study).status == Rater.Status.ADMITTED
    assert admitted_rater(study).status == Rater.Status.QUOTA_FULL
    black = {"age": "us-age-18-34", "ethnicity": "us-ethnicity-black", "politics": "us-politics-democrat"}
    assert admitted_rater(study, answers=black).status == Rater.Status.QUOTA_FULL  # no target for that cell
    cell.refresh_from_db()
    assert cell.admitted == 1


def test_it_undoes_every_slot_when_one_needed_quota_is_full(study, groups):
    cell = quota_set(study=study, groups=groups_named("us-age-18-34", "us-ethnicity-asian"), target=5)
    marginal = quota_set(study=study, groups=groups_named("us-politics-democrat"), target=1)
    assert admitted_rater(study).status == Rater.Status.ADMITTED
    assert admitted_rater(study).status == Rater.Status.QUOTA_FULL
    cell.refresh_from_db()
    marginal.refresh_from_db()
    assert (cell.admitted, marginal.admitted) == (1, 1)
    assert QuotaSlot.objects.count() == 2


def test_it_exempts_a_rater_who_prefers_not_to_say_from_that_axis(study, groups):
    quota_set(study=study, groups=groups_named("us-politics-democrat"), target=0)
    quota_set(study=study, groups=groups_named("us-age-18-34", "us-politics-democrat"), target=0)
    declined = {"age": "us-age-18-34", "ethnicity": "us-ethnicity-asian", "politics": ""}
    rater = admitted_rater(study, answers=declined)
    assert rater.status == Rater.Status.ADMITTED
    assert list(rater.groups.values_list("slug", flat=True)) == ["us-age-18-34", "us-ethnicity-asian"]


def test_it_screens_out_raters_from_countries_the_study_does_not_sample(study, groups):
    study.countries.set([Country.objects.get(code="UK")])
    rater = admitted_rater(study)
    assert rater.status == Rater.Status.SCREENED_OUT
    assert QuotaSlot.objects.count() == 0


def test_it_decides_only_once(study, groups):
    quota = quota_set(study=study, groups=groups_named("us-age-18-34"), target=5)
    rater = admitted_rater(study)
    assert rater_admit(rater=rater).status == Rater.Status.ADMITTED
    quota.refresh_from_db()
    assert quota.admitted == 1


def test_it_ignores_a_second_screener_submission(study, groups):
    rater = rater_screen(
        rater=rater_create(entry=PendingEntry(study_id=study.pk)),
        country_code="US",
        answers=US_OLDER_WHITE_REPUBLICAN,
    )
    again = rater_screen(rater=rater, country_code="UK", answers={"age": "uk-age-18-34"})
    assert again.country.code == "US"
    assert sorted(again.groups.values_list("slug", flat=True)) == sorted(US_OLDER_WHITE_REPUBLICAN.values())


def test_it_completes_the_session_after_the_studys_number_of_battles(study, rater):
    study.battles_per_session = 1
    study.save()
    rater = Rater.objects.get(pk=rater.pk)
    assert rater_complete_if_done(rater=rater).status == Rater.Status.ADMITTED
    voted_battle(rater)
    rater = rater_complete_if_done(rater=rater)
    assert rater.status == Rater.Status.COMPLETED and rater.completed_at is not None


def test_it_releases_the_slots_of_raters_who_never_vote(study, groups):
    quota = quota_set(study=study, groups=groups_named("us-age-18-34"), target=2)
    idle, active = admitted_rater(study), admitted_rater(study)
    voted_battle(active)
    Rater.objects.update(admitted_at=timezone.now() - timedelta(minutes=study.abandon_after_minutes + 1))
    assert raters_release_abandoned() == 1
    assert raters_release_abandoned() == 0
    quota.refresh_from_db()
    assert quota.admitted == 1
    idle.refresh_from_db()
    assert idle.status == Rater.Status.RELEASED and not idle.quota_slots.exists()
    assert (
        rater_admit(rater=idle).status == Rater.Status.ADMITTED
    )  # a returning rater gets back in if there is room


def test_it_keeps_recent_raters(study, groups):
    admitted_rater(study)
    assert raters_release_abandoned() == 0


def test_it_validates_quota_cells(study, groups):
    with pytest.raises(InvalidInput, match="same country"):
        quota_set(study=study, groups=groups_named("us-age-18-34", "uk-ethnicity-white"), target=1)
    with pytest.raises(InvalidInput, match="one group per axis"):
        quota_set(study=study, groups=groups_named("us-age-18-34", "us-age-55-plus"), target=1)
    with pytest.raises(InvalidInput, match="negative"):
        quota_set(study=study, groups=groups_named("us-age-18-34"), target=-1)
    quota = quota_set(study=study, groups=groups_named("us-age-18-34"), target=1)
    with pytest.raises(InvalidInput, match="negative"):
        quota_target_update(quota=quota, target=-3)


def test_it_fills_targets_from_census_presets_that_add_up(study, groups):
    quotas = quotas_apply_census_preset(
        study=study, country_code="UK", total=500, marginal=True, interlocking=True
    )
    marginal = [q for q in quotas if q.groups.count() == 1]
    cells = [q for q in quotas if q.groups.count() == 3]
    assert len(marginal) == 3 + 4 + 5 and len(cells) == 3 * 4 * 5
    for axis in ("age", "ethnicity", "politics"):
        assert sum(q.target for q in marginal if q.groups.get().axis.slug == axis) == 500
    assert sum(q.target for q in cells) == 500
    quotas_apply_census_preset(study=study, country_code="UK", total=100, marginal=True, interlocking=False)
    assert Quota.objects.count() == len(quotas)
    ages = [q for q in Quota.objects.all() if q.groups.count() == 1 and q.groups.get().axis.slug == "age"]
    assert sum(q.target for q in ages) == 100


def test_it_explains_a_bad_preset_request(study, groups):
    with pytest.raises(InvalidInput, match="no census preset for FR"):
        quotas_apply_census_preset(
            study=study, country_code="FR", total=10, marginal=True, interlocking=False
        )
    with pytest.raises(InvalidInput, match="at least 1"):
        quotas_apply_census_preset(study=study, country_code="US", total=0, marginal=True, interlocking=False)
    Group.objects.filter(slug="us-politics-independent").delete()
    with pytest.raises(InvalidInput, match="Independent"):
        quotas_apply_census_preset(
            study=study, country_code="US", total=10, marginal=True, interlocking=False
        )
    assert Quota.objects.count() == 0
