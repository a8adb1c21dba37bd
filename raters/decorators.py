from functools import wraps

from django.shortcuts import render

from raters.selectors import rater_from_session


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
