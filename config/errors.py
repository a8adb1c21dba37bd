"""The application's one error hierarchy, mapped once to HTTP for HTML and htmx responses.

Services raise these with a message fit to show the user; views never build error responses by hand.
"""

from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect


class ApplicationError(Exception):
    status = 400
    title = "Something is not right"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidInput(ApplicationError):
    status = 400
    title = "That did not work"


class NotFound(ApplicationError):
    status = 404
    title = "Not found"


class Forbidden(ApplicationError):
    status = 403
    title = "Not allowed"


class Conflict(ApplicationError):
    status = 409
    title = "Already done"


class RateLimited(ApplicationError):
    status = 429
    title = "Please slow down"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class StrikeWarning(ApplicationError):
    """A quality-control strike: the rater is told at once, politely, and may carry on."""

    status = 422

    def __init__(self, message: str, *, number: int, of: int):
        super().__init__(message)
        self.title = f"Warning {number} of {of}"


class SessionEnded(ApplicationError):
    """The rater may not go on (e.g. a third strike): send them to the page that says what happens next."""

    redirect_to = "/rate/next/"


class ApplicationErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, ApplicationError):
            return None
        if isinstance(exception, SessionEnded):
            if getattr(request, "htmx", False):
                return HttpResponseClientRedirect(exception.redirect_to)
            return redirect(exception.redirect_to)
        context = {"title": exception.title, "message": exception.message}
        if getattr(request, "htmx", False):
            # Swapped into the page's error slot instead of replacing the content the rater is working on.
            response = render(request, "_error_fragment.html", context, status=exception.status)
            response["HX-Retarget"] = "#errors"
            response["HX-Reswap"] = "innerHTML"
        else:
            response = render(request, "error.html", context, status=exception.status)
        if isinstance(exception, RateLimited):
            response["Retry-After"] = str(exception.retry_after)
        return response
