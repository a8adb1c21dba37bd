"""Staff pages for running studies: live quota fill, targets, census presets, open/close, CSV export.

Each page needs its own permission (raters.permissions), and each change is written to the audit trail
with who made it and the value before and after.
"""

import codecs
import csv

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from config.errors import InvalidInput
from raters.audit import audit_record
from raters.models import Quota, Study
from raters.permissions import (
    EXPORT_STUDY,
    MANAGE_STUDY,
    VIEW_STUDY,
    staff_permission_required,
)
from raters.selectors import study_quota_rows, study_rater_counts
from raters.services import (
    ReconcileSummary,
    panel_export_reconcile,
    quota_target_update,
    quotas_apply_census_preset,
)
from stats.census import PRESETS


def _int_field(request, name: str, label: str) -> int:
    try:
        return int(request.POST.get(name, ""))
    except ValueError:
        raise InvalidInput(f"{label} must be a whole number.") from None


def _actor(request) -> str:
    return request.user.get_username()


def _study_target(study: Study) -> str:
    return f"study {study.slug}"


def _targets(study: Study) -> dict[str, int]:
    return dict(Quota.objects.filter(study=study).order_by("cell_key").values_list("cell_key", "target"))


@staff_permission_required(VIEW_STUDY)
@require_safe
def study_list(request):
    return render(request, "raters/staff/study_list.html", {"studies": Study.objects.order_by("-created_at")})


@staff_permission_required(VIEW_STUDY)
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


@staff_permission_required(EXPORT_STUDY)
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
    # Who took which data out is part of the trail, though nothing changed.
    audit_record(actor=_actor(request), action="study_export_quotas", target=_study_target(study))
    return response


@staff_permission_required(MANAGE_STUDY)
@require_http_methods(["POST"])
def study_set_open(request, study_slug: str):
    study = get_object_or_404(Study, slug=study_slug)
    is_open = request.POST.get("open") == "yes"
    Study.objects.filter(pk=study.pk).update(is_open=is_open)
    audit_record(
        actor=_actor(request),
        action="study_set_open",
        target=_study_target(study),
        before={"is_open": study.is_open},
        after={"is_open": is_open},
    )
    return redirect("raters:staff_study", study_slug=study_slug)


@staff_permission_required(MANAGE_STUDY)
@require_http_methods(["POST"])
def quota_set_target(request, study_slug: str, quota_id: int):
    quota = get_object_or_404(Quota, pk=quota_id, study__slug=study_slug)
    before = quota.target
    quota = quota_target_update(quota=quota, target=_int_field(request, "target", "The target"))
    audit_record(
        actor=_actor(request),
        action="quota_set_target",
        target=f"quota {quota.cell_key} of study {study_slug}",
        before={"target": before},
        after={"target": quota.target},
    )
    return redirect("raters:staff_study", study_slug=study_slug)


@staff_permission_required(MANAGE_STUDY)
@require_http_methods(["POST"])
def study_apply_preset(request, study_slug: str):
    study = get_object_or_404(Study, slug=study_slug)
    before = _targets(study)
    quotas_apply_census_preset(
        study=study,
        country_code=request.POST.get("country", ""),
        total=_int_field(request, "total", "The total sample size"),
        marginal=request.POST.get("marginal") == "yes",
        interlocking=request.POST.get("interlocking") == "yes",
    )
    audit_record(
        actor=_actor(request),
        action="study_apply_preset",
        target=_study_target(study),
        before={"targets": before},
        after={"targets": _targets(study), "preset": request.POST.get("country", "")},
    )
    return redirect("raters:staff_study", study_slug=study_slug)


# A panel export has a row of a few hundred bytes per submission: this is far above any real study's.
PANEL_EXPORT_MAX_BYTES = 50 * 1024 * 1024


def _reconcile_message(summary: ReconcileSummary) -> str:
    def n(count: int, one: str, many: str) -> str:
        return f"{count} {one if count == 1 else many}"

    message = (
        f"Reconciled {n(summary.reconciled, 'rater', 'raters')}; "
        f"{n(summary.unmatched, 'approved id matched no rater', 'approved ids matched no rater')}; "
        f"{n(summary.already, 'was', 'were')} already reconciled. "
        f"Rows not approved (skipped): {summary.not_approved}."
    )
    if summary.bad_line_count:
        lines = ", ".join(str(line) for line in summary.bad_lines)
        more = summary.bad_line_count - len(summary.bad_lines)
        message += f" Rows without a valid participant id or status (skipped), by line: {lines}"
        message += f" and {more} more." if more > 0 else "."
    return message


@staff_permission_required(MANAGE_STUDY)
@require_http_methods(["POST"])
def study_reconcile(request, study_slug: str):
    """Upload of the panel's export of submissions: its approved participants are reconciled."""
    study = get_object_or_404(Study, slug=study_slug)
    upload = request.FILES.get("export")
    if upload is None:
        raise InvalidInput("Choose the panel's CSV export of submissions to upload.")
    if upload.size > PANEL_EXPORT_MAX_BYTES:
        raise InvalidInput(
            f"This file is {upload.size // 1_000_000} MB; a panel's CSV export is far smaller "
            f"(at most {PANEL_EXPORT_MAX_BYTES // 1_000_000} MB is taken)."
        )
    summary = panel_export_reconcile(study=study, lines=codecs.iterdecode(upload, "utf-8-sig"))
    audit_record(
        actor=_actor(request),
        action="study_reconcile_panel",
        target=_study_target(study),
        after=summary.as_audit(),
    )
    messages.success(request, _reconcile_message(summary))
    return redirect("raters:staff_study", study_slug=study_slug)
