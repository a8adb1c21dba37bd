"""Staff pages for quality control: strikes and flags to review, lifting a strike, excluding a rater.

Each needs its permission (raters.permissions) and each change is written to the audit trail."""

from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from raters.audit import audit_record
from raters.models import Rater, Study
from raters.permissions import MODERATE_RATERS, VIEW_STUDY, staff_permission_required
from raters.services import rater_restore
from tournaments.models import RuleOutcome, StaffAction, Strike
from tournaments.quality import rater_exclude_by_staff, strike_lift
from tournaments.selectors import rule_outcome_stats, study_reconciliation


def _rater_state(rater: Rater) -> dict:
    rater.refresh_from_db()
    return {"status": rater.status}


@staff_permission_required(VIEW_STUDY)
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
    return render(request, "tournaments/staff/study_quality.html", context)


@staff_permission_required(MODERATE_RATERS)
@require_http_methods(["POST"])
def strike_lift_view(request, study_slug: str, strike_id: int):
    strike = get_object_or_404(Strike, pk=strike_id, rater__study__slug=study_slug)
    actor = request.user.get_username()
    before = {**_rater_state(strike.rater), "strike_lifted": strike.lifted_at is not None}
    reason = request.POST.get("reason", "")
    strike = strike_lift(strike=strike, staff=actor, reason=reason)
    audit_record(
        actor=actor,
        action="strike_lift",
        target=f"strike {strike.pk} ({strike.rule}) of rater {strike.rater.public_id}",
        before=before,
        after={**_rater_state(strike.rater), "strike_lifted": True, "reason": reason},
    )
    return redirect("tournaments:staff_quality", study_slug=study_slug)


@staff_permission_required(MODERATE_RATERS)
@require_http_methods(["POST"])
def rater_exclude_view(request, study_slug: str, rater_id: str):
    rater = get_object_or_404(Rater, public_id=rater_id, study__slug=study_slug)
    actor = request.user.get_username()
    before = _rater_state(rater)
    reason = request.POST.get("reason", "")
    rater_exclude_by_staff(rater=rater, staff=actor, reason=reason)
    audit_record(
        actor=actor,
        action="rater_exclude",
        target=f"rater {rater.public_id}",
        before=before,
        after={**_rater_state(rater), "reason": reason},
    )
    return redirect("tournaments:staff_quality", study_slug=study_slug)


@staff_permission_required(MODERATE_RATERS)
@require_http_methods(["POST"])
def rater_restore_view(request, study_slug: str, rater_id: str):
    rater = get_object_or_404(Rater, public_id=rater_id, study__slug=study_slug)
    actor = request.user.get_username()
    before = {"held_out_reason": rater.held_out_reason}
    if rater_restore(rater=rater, staff=actor):
        audit_record(
            actor=actor,
            action="rater_restore",
            target=f"rater {rater.public_id}",
            before=before,
            after={"held_out": False},
        )
    return redirect("tournaments:staff_quality", study_slug=study_slug)


@staff_permission_required(VIEW_STUDY)
@require_safe
def study_reconciliation_view(request, study_slug: str):
    """The study dashboard's panel reconciliation counts (a fragment: the dashboard sits below
    tournaments, which owns votes)."""
    study = get_object_or_404(Study, slug=study_slug)
    context = {"study": study, "reconciliation": study_reconciliation(study=study)}
    return render(request, "tournaments/staff/_reconciliation.html", context)
