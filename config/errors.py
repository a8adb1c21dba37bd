"""The application's one error hierarchy, mapped once to HTTP for HTML and htmx responses.

Services raise these with a message fit to show the user; views never build error responses by hand.
"""

from django.shortcuts import render


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


class Conflict(ApplicationError):
    status = 409
    title = "Already done"


class RateLimited(ApplicationError):
    status = 429
    title = "Please slow down"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class ApplicationErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, ApplicationError):
            return None
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
