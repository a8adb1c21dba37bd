"""Staff pages for running studies: live quota fill, targets, census presets, open/close, CSV export."""

import csv

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from config.errors import InvalidInput
from raters.models import Quota, Study
from raters.selectors import study_quota_rows, study_rater_counts
from raters.services import quota_target_update, quotas_apply_census_preset
from stats.census import PRESETS


def _int_field(request, name: str, label: str) -> int:
    try:
        return int(request.POST.get(name, ""))
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number.") from None


@staff_member_required
@require_http_methods(["GET"])
def study_list(request):
    return render(request, "raters/staff/study_list.html", {"studies": Study.objects.order_by("-created_at")})


@staff_member_required
@require_http_methods(["GET"])
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
@require_http_methods(["GET"])
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
