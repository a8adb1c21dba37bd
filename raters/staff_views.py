"""Staff pages for running studies: live quota fill, targets, census presets, open/close, CSV export."""

import csv

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from config.errors import InvalidInput
from raters.census import PRESETS
from raters.models import Quota, Rater, RuleOutcome, StaffAction, Strike, Study
from raters.selectors import rule_outcome_stats, study_quota_rows, study_rater_counts
from raters.services import (
    quota_target_update,
    quotas_apply_census_preset,
    rater_exclude_by_staff,
    rater_restore,
    strike_lift,
)


def _int_field(request, name: str, label: str) -> int:
    try:
        return int(request.POST.get(name, ""))
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number.") from None


@staff_member_required
@require_safe
def study_list(request):
    return render(request, "raters/staff/study_list.html", {"studies": Study.objects.order_by("-created_at")})


@staff_member_required
@require_safe
def study_dashboard(request, study_slug: str):
    study = get_object_or_404(Study, slug=study_slug)
    context = {
        "study": study,
        "rows": study_quota_rows(study=study),
        "rater_counts": study_rater_counts(study=study),
        "presets": PRESETS,
    }
    if request.htmx:
        return render(request, "raters/staff/_quota_table.html", context)
    return render(request, "raters/staff/study_dashboard.html", context)


@staff_member_required
@require_safe
def study_quotas_csv(request, study_slug: str):
    study = get_object_or_404(Study, slug=study_slug)
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-quotas.csv"'
    writer = csv.writer(response)
    writer.writerow(["quota", "groups", "target", "admitted", "completed", "struck"])
    for row in study_quota_rows(study=study):
        writer.writerow(
            [row.quota.label, row.quota.cell_key, row.quota.target, row.admitted, row.completed, row.struck]
        )
    return response


@staff_member_required
@require_http_methods(["POST"])
def study_set_open(request, study_slug: str):
    Study.objects.filter(slug=study_slug).update(is_open=request.POST.get("open") == "yes")
    return redirect("raters:staff_study", study_slug=study_slug)


@staff_member_required
@require_http_methods(["POST"])
def quota_set_target(request, study_slug: str, quota_id: int):
    quota = get_object_or_404(Quota, pk=quota_id, study__slug=study_slug)
    quota_target_update(quota=quota, target=_int_field(request, "target", "The target"))
    return redirect("raters:staff_study", study_slug=study_slug)


@staff_member_required
@require_http_methods(["POST"])
def study_apply_preset(request, study_slug: str):
    study = get_object_or_404(Study, slug=study_slug)
    quotas_apply_census_preset(
        study=study,
        country_code=request.POST.get("country", ""),
        total=_int_field(request, "total", "The total sample size"),
        marginal=request.POST.get("marginal") == "yes",
        interlocking=request.POST.get("interlocking") == "yes",
    )
    return redirect("raters:staff_study", study_slug=study_slug)


@staff_member_required
@require_safe
def study_quality(request, study_slug: str):
    """Strikes and flags to review, with how every rule has been acting."""
    study = get_object_or_404(Study, slug=study_slug)
    context = {
        "study": study,
        "strikes": Strike.objects.filter(rater__study=study)
        .select_related("rater")
        .order_by("-created_at")[:200],
        "flags": RuleOutcome.objects.filter(rater__study=study, action=RuleOutcome.Action.FLAGGED)
        .select_related("rater")
        .order_by("-created_at")[:200],
        "rule_stats": rule_outcome_stats(study=study),
        "held_out": Rater.objects.filter(study=study)
        .exclude(held_out_reason="")
        .order_by("-held_out_at", "-pk")[:200],
        "actions": StaffAction.objects.filter(rater_public_id__in=study.raters.values("public_id")).order_by(
            "-created_at"
        )[:50],
    }
    return render(request, "raters/staff/study_quality.html", context)


@staff_member_required
@require_http_methods(["POST"])
def strike_lift_view(request, study_slug: str, strike_id: int):
    strike = get_object_or_404(Strike, pk=strike_id, rater__study__slug=study_slug)
    strike_lift(strike=strike, staff=request.user.get_username(), reason=request.POST.get("reason", ""))
    return redirect("raters:staff_quality", study_slug=study_slug)


@staff_member_required
@require_http_methods(["POST"])
def rater_exclude_view(request, study_slug: str, rater_id: str):
    rater = get_object_or_404(Rater, public_id=rater_id, study__slug=study_slug)
    rater_exclude_by_staff(
        rater=rater, staff=request.user.get_username(), reason=request.POST.get("reason", "")
    )
    return redirect("raters:staff_quality", study_slug=study_slug)


@staff_member_required
@require_http_methods(["POST"])
def rater_restore_view(request, study_slug: str, rater_id: str):
    rater = get_object_or_404(Rater, public_id=rater_id, study__slug=study_slug)
    rater_restore(rater=rater, staff=request.user.get_username())
    return redirect("raters:staff_quality", study_slug=study_slug)
