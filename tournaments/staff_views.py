"""Staff pages for quality control: strikes and flags to review, lifting a strike, excluding a rater."""

from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from raters.models import Rater, Study
from tournaments.models import RuleOutcome, StaffAction, Strike
from tournaments.quality import rater_exclude_by_staff, strike_lift
from tournaments.selectors import rule_outcome_stats


@staff_member_required
@require_http_methods(["GET"])
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
        "actions": StaffAction.objects.filter(rater_public_id__in=study.raters.values("public_id")).order_by(
            "-created_at"
        )[:50],
    }
    return render(request, "tournaments/staff/study_quality.html", context)


@staff_member_required
@require_http_methods(["POST"])
def strike_lift_view(request, study_slug: str, strike_id: int):
    strike = get_object_or_404(Strike, pk=strike_id, rater__study__slug=study_slug)
    strike_lift(strike=strike, staff=request.user.get_username(), reason=request.POST.get("reason", ""))
    return redirect("tournaments:staff_quality", study_slug=study_slug)


@staff_member_required
@require_http_methods(["POST"])
def rater_exclude_view(request, study_slug: str, rater_id: str):
    rater = get_object_or_404(Rater, public_id=rater_id, study__slug=study_slug)
    rater_exclude_by_staff(
        rater=rater, staff=request.user.get_username(), reason=request.POST.get("reason", "")
    )
    return redirect("tournaments:staff_quality", study_slug=study_slug)
