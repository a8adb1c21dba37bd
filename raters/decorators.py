from functools import wraps

from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect

from raters.models import Rater
from raters.selectors import rater_from_session
from raters.services import rater_admit


def rater_required(view):
    """Give the view the rater of this browser session as `request.rater`, or explain how to start one."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        rater = rater_from_session(request)
        if rater is None:
            context = {
                "title": "No rating session",
                "message": "This browser has no rating session. Open your study link again, or start from "
                "the home page.",
            }
            return render(request, "error.html", context, status=403)
        request.rater = rater
        return view(request, *args, **kwargs)

    return wrapper


def admitted_rater_required(view):
    """Like `rater_required`, for pages only an admitted rater may use; others go to their next step.

    A rater whose slot was released for inactivity is readmitted here if their quotas still have room.
    """

    @rater_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.rater.status == Rater.Status.RELEASED:
            request.rater = rater_admit(rater=request.rater)
        if request.rater.status != Rater.Status.ADMITTED:
            if request.htmx:
                return HttpResponseClientRedirect("/rate/next/")
            return redirect("raters:next")
        return view(request, *args, **kwargs)

    return wrapper
