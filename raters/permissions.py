"""What each staff action needs. Staff pages check one of these Django permissions, never "is staff"
alone: a staff user without a permission is refused (403) whatever they can reach."""

from functools import wraps

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied

VIEW_STUDY = "raters.view_study_dashboard"
MANAGE_STUDY = "raters.manage_study"
MODERATE_RATERS = "raters.moderate_raters"
EXPORT_STUDY = "raters.export_study"
EXPORT_LINKED = "raters.export_linked"

# The ready-made groups (created by migration 0004; assign people to them in the admin). The linked
# export is granted to no group: it is a per-researcher decision.
GROUP_PERMISSIONS = {
    "study viewer": ["view_study_dashboard"],
    "study manager": ["view_study_dashboard", "manage_study", "moderate_raters", "export_study"],
}


def staff_permission_required(permission: str):
    """A staff page's guard: the staff login for anyone not logged in as staff, then 403 without
    `permission` (superusers have every permission)."""

    def decorator(view):
        @staff_member_required
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.has_perm(permission):
                raise PermissionDenied(f"You need the permission {permission!r} to do this.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
