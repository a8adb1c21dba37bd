"""What every REST API view shares: one error shape, pagination, throttles, conditional GET with caching,
and (in config/api_schema.py, which the settings load separately to avoid an import cycle with DRF's
generic views) the OpenAPI schema's documentation of all of it.

The error shape. Every API error, whatever raised it (a serializer's validation, authentication, a
throttle, an `ApplicationError` from a service, an unknown URL under /api/, an unexpected exception), is
answered with the right status and this body:

    {"error": {"code": "<machine_code>", "message": "<a sentence for people>", "details": {...} | null}}

`code` is stable and meant for programs; `message` may change wording; `details` holds per-field
messages for validation errors (`{"field": ["message", ...]}`) and other structured facts (e.g.
`{"retry_after": 7}` on 429), or null. Views never build error bodies by hand: they raise, and
`api_exception_handler` (DRF views) or `ApiErrorMiddleware` (anything else under /api/) answers.
"""

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, HttpResponseNotModified, JsonResponse
from django.utils.http import parse_etags, quote_etag
from rest_framework import exceptions, serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import set_rollback

from config.answer_cache import CACHE_SECONDS, Uncacheable, answer_get_or_build
from config.errors import (
    ApplicationError,
    Conflict,
    InvalidInput,
    NotFound,
    RateLimited,
    SessionEnded,
    StrikeWarning,
)

logger = logging.getLogger(__name__)

API_PATH_PREFIX = "/api/"

# --- The error shape -----------------------------------------------------------------------------------

# Machine codes of our application errors. A subclass may set its own `code` attribute instead.
APPLICATION_ERROR_CODES: dict[type[ApplicationError], str] = {
    InvalidInput: "invalid_input",
    NotFound: "not_found",
    Conflict: "conflict",
    RateLimited: "rate_limited",
    StrikeWarning: "quality_warning",
    SessionEnded: "session_ended",
}
# DRF's own codes, renamed where ours differ, so one condition has one code across the API.
DRF_CODE_RENAMES = {"invalid": "invalid_input", "throttled": "rate_limited", "error": "server_error"}
# Sentences for statuses that reach the middleware without a message of ours (Django's own 404 for an
# unknown URL, its CSRF 403, a 500 outside a DRF view).
STATUS_ERRORS = {
    400: ("bad_request", "The request could not be understood."),
    403: ("permission_denied", "You do not have permission to do this."),
    404: ("not_found", "There is nothing at this address of the API."),
    405: ("method_not_allowed", "This address does not accept that HTTP method."),
    413: ("request_too_large", "The request body is too large."),
    500: ("server_error", "Something went wrong on our side; it has been logged. Please try again later."),
}


def error_body(code: str, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details}}


def error_response(
    status: int, code: str, message: str, details: dict | None = None, *, headers: dict | None = None
) -> JsonResponse:
    """The error shape as a plain Django response, for code that runs outside a DRF view."""
    return JsonResponse(error_body(code, message, details), status=status, headers=headers)


def api_exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's EXCEPTION_HANDLER: every exception raised in an API view becomes the error shape."""
    set_rollback()
    if isinstance(exc, ApplicationError):
        return _application_error(exc)
    if isinstance(exc, RequestDataTooBig):
        return _as_drf_response(_too_large())
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    if isinstance(exc, exceptions.APIException):
        return _api_exception(exc)
    view = context.get("view")
    logger.exception("Unexpected error in API view %s", type(view).__name__ if view else "?", exc_info=exc)
    code, message = STATUS_ERRORS[500]
    return Response(error_body(code, message), status=500)


def _application_error(exc: ApplicationError) -> Response:
    code = getattr(exc, "code", None) or APPLICATION_ERROR_CODES.get(type(exc)) or _snake(type(exc).__name__)
    # An error may carry structured facts of its own for programs (e.g. a rater's session outcome).
    status, details, headers = exc.status, getattr(exc, "details", None), {}
    if isinstance(exc, RateLimited):
        details, headers = {"retry_after": exc.retry_after}, {"Retry-After": str(exc.retry_after)}
    elif isinstance(exc, StrikeWarning):
        details = {"title": exc.title}
    elif isinstance(exc, SessionEnded):
        # The HTML flow redirects; an API client is told it may not go on, and where a person would go.
        status, details = 403, {"next": exc.redirect_to}
    return Response(error_body(code, exc.message, details), status=status, headers=headers)


def _api_exception(exc: exceptions.APIException) -> Response:
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    details = None
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        retry_after = max(1, int(exc.wait + 0.999))
        headers["Retry-After"] = str(retry_after)
        details = {"retry_after": retry_after}
        message = f"Too many requests; please wait {retry_after} seconds."
    elif isinstance(exc, exceptions.ValidationError):
        details = _field_errors(exc.detail)
        message = _validation_message(details)
    else:
        message = _text(exc.detail)
    code = exc.default_code
    if isinstance(exc.detail, exceptions.ErrorDetail) and exc.detail.code:
        code = exc.detail.code
    return Response(
        error_body(DRF_CODE_RENAMES.get(code, code), message, details),
        status=exc.status_code,
        headers=headers,
    )


def _field_errors(detail) -> dict:
    if isinstance(detail, dict):
        return {field: _plain(messages) for field, messages in detail.items()}
    return {api_settings.NON_FIELD_ERRORS_KEY: _plain(detail)}


def _plain(value):
    """ErrorDetail strings (and nested lists or dicts of them) as plain JSON values."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def _validation_message(details: dict) -> str:
    fields = [field for field in details if field != api_settings.NON_FIELD_ERRORS_KEY]
    if not fields:
        return " ".join(_first_messages(details.get(api_settings.NON_FIELD_ERRORS_KEY))) or (
            "The request is not valid."
        )
    if len(fields) == 1:
        first = _first_messages(details[fields[0]])
        return (
            f"Invalid value for '{fields[0]}': {first[0]}" if first else f"Invalid value for '{fields[0]}'."
        )
    return f"Invalid values for {', '.join(repr(field) for field in fields)}; see details."


def _first_messages(value) -> list[str]:
    if isinstance(value, list):
        return [text for item in value for text in _first_messages(item)][:1]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _first_messages(item)][:1]
    return [str(value)] if value else []


def _text(detail) -> str:
    if isinstance(detail, list | tuple):
        return " ".join(_text(item) for item in detail)
    if isinstance(detail, dict):
        return " ".join(f"{key}: {_text(value)}" for key, value in detail.items())
    return str(detail)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


class ApiErrorMiddleware:
    """The error shape for what goes wrong under /api/ outside a DRF view's own handling: Django's 404
    for an unknown URL, a 405 from a plain view, the CSRF failure page, an uncaught exception (500).

    Place it last in MIDDLEWARE, so its `process_exception` runs before the HTML error middleware's.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            request.path.startswith(API_PATH_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return self._replacement(response)
        return response

    def process_exception(self, request, exception):
        if not request.path.startswith(API_PATH_PREFIX):
            return None
        if isinstance(exception, ApplicationError):
            return _as_django_response(_application_error(exception))
        if isinstance(exception, Http404):
            return error_response(404, *STATUS_ERRORS[404])
        if isinstance(exception, DjangoPermissionDenied):
            return error_response(403, *STATUS_ERRORS[403])
        if isinstance(exception, RequestDataTooBig):
            return _too_large()
        logger.exception("Unexpected error under %s", request.path, exc_info=exception)
        return error_response(500, *STATUS_ERRORS[500])

    @staticmethod
    def _replacement(response) -> JsonResponse:
        code, message = STATUS_ERRORS.get(response.status_code, ("error", response.reason_phrase + "."))
        replacement = error_response(response.status_code, code, message)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                replacement[header] = response[header]
        return replacement


def _as_django_response(response: Response) -> JsonResponse:
    return JsonResponse(response.data, status=response.status_code, headers=dict(response.items()))


def _as_drf_response(response: JsonResponse) -> Response:
    return Response(json.loads(response.content), status=response.status_code)


def _too_large() -> JsonResponse:
    # Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE with a SuspiciousOperation, which
    # would otherwise reach us as an unexpected error (500); the client sent too much, and should know
    # how much is allowed.
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error_response(
        413,
        STATUS_ERRORS[413][0],
        f"The request body is larger than the limit of {limit} bytes.",
        {"max_bytes": limit},
    )


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. not_found, invalid_input.")
    message = serializers.CharField(help_text="What went wrong, as a sentence for people.")
    details = serializers.JSONField(
        allow_null=True,
        help_text="Per-field messages for invalid input ({field: [message, ...]}), other facts such as "
        "retry_after, or null.",
    )


class ErrorSerializer(serializers.Serializer):
    """The one shape of every API error."""

    error = ErrorDetailSerializer()


# --- Pagination ---------------------------------------------------------------------------------------


class ApiPagination(PageNumberPagination):
    """`?page=N&page_size=M`: strict, so a bad value is a 400 that says so, never a silent default."""

    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def get_page_size(self, request) -> int:
        return self._positive(request, self.page_size_query_param, self.page_size, upper=self.max_page_size)

    def get_page_number(self, request, paginator) -> int:
        return self._positive(request, self.page_query_param, 1)

    def paginate_queryset(self, queryset, request, view=None):
        try:
            return super().paginate_queryset(queryset, request, view)
        except exceptions.NotFound:
            raise NotFound(
                f"There is no page {request.query_params.get(self.page_query_param)} "
                f"(there are {self.page_count(queryset, request)} page(s))."
            ) from None

    def page_count(self, queryset, request) -> int:
        return self.django_paginator_class(queryset, self.get_page_size(request)).num_pages

    @staticmethod
    def _positive(request, name: str, default: int, *, upper: int | None = None) -> int:
        raw = request.query_params.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise exceptions.ValidationError({name: ["A whole number is required."]}) from None
        if value < 1 or (upper is not None and value > upper):
            bounds = f"between 1 and {upper}" if upper else "at least 1"
            raise exceptions.ValidationError({name: [f"Must be {bounds}."]})
        return value

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
                parameter["description"] = f"Results per page (default {self.page_size})."
        return parameters


# --- Throttles ----------------------------------------------------------------------------------------


class PublicReadThrottle(SimpleRateThrottle):
    """Anonymous reads, per client address (REMOTE_ADDR, or the X-Forwarded-For entry NUM_PROXIES from
    the right, so a forged header cannot reset the count)."""

    scope = "public_read"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class ExportThrottle(PublicReadThrottle):
    """Downloads of whole tournaments are heavy: a lower rate of their own."""

    scope = "exports"


class PublicReadMixin:
    """The read API's policy: anyone may read, no session or cookie is touched, throttled per address.

    Throttles run when an answer has to be built, not before: `conditional_response` runs them on a
    cache miss. An answer served from the cache costs about what a trivial view does, and counting it
    would cost more than serving it (two cache round trips); the limit guards the database. A view that
    answers without `conditional_response` sets `throttle_after_cache = False`.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [PublicReadThrottle]
    throttle_after_cache = True

    def check_throttles(self, request):
        if not self.throttle_after_cache:
            super().check_throttles(request)

    def check_throttles_now(self, request):
        super().check_throttles(request)


# --- Conditional GET and caching ----------------------------------------------------------------------


def json_bytes(data: Any) -> bytes:
    return JSONRenderer().render(data)


def conditional_response(
    request,
    build: Callable[[], Any],
    *,
    version: Any = None,
    max_age: int = CACHE_SECONDS,
    content_type: str = "application/json",
    render: Callable[[Any], bytes] = json_bytes,
) -> HttpResponse:
    """A GET answered with a strong ETag (a digest of the body) and `Cache-Control: public, max-age`,
    or a 304 when the client's `If-None-Match` already names it.

    With `version` (a value that changes whenever the data behind the answer can change, and is cheap
    to read, e.g. `boards_site_version()`), the rendered answer is cached under the request (scheme,
    host, path and query) and served while the version stands: first from this process's copy
    (no round trip), else from the shared cache (`config.answer_cache`); a cached answer costs no database
    query, and a miss is built once however many ask for it at the same time. `build` runs only on a
    miss; it validates and resolves the request, so a bad request is never stored, and it may return
    `Uncacheable(data)`.
    """

    def answer_build():
        _throttle(request)
        data = build()
        uncacheable = isinstance(data, Uncacheable)
        body = render(data.data if uncacheable else data)
        answer = (_etag(body), body, content_type)
        return Uncacheable(answer) if uncacheable else answer

    if version is None:
        answer = answer_build()
    else:
        answer = answer_get_or_build(_cache_key(request), version, answer_build)
    if isinstance(answer, Uncacheable):
        answer = answer.data
    etag, body, content_type = answer
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={max_age}"}
    if _client_has(request, etag):
        return HttpResponseNotModified(headers=headers)
    return HttpResponse(body, content_type=content_type, headers=headers)


def _throttle(request) -> None:
    """The view's throttles, for a request whose answer is about to be built (see PublicReadMixin)."""
    view = getattr(request, "parser_context", {}).get("view")
    if getattr(view, "throttle_after_cache", False):
        view.check_throttles_now(request)


def _cache_key(request) -> str:
    """Everything an answer depends on: absolute links in it carry the scheme and host."""
    query = "&".join(sorted(f"{k}={v}" for k, values in request.GET.lists() for v in values))
    where = f"{request.scheme}://{request.get_host()}{request.path}?{query}"
    return "populus:api:response:" + hashlib.sha256(where.encode()).hexdigest()


def _etag(body: bytes) -> str:
    return quote_etag(hashlib.sha256(body).hexdigest()[:32])


def _client_has(request, etag: str) -> bool:
    header = request.META.get("HTTP_IF_NONE_MATCH")  # not request.headers: that builds every header
    if not header:
        return False
    # Weak comparison, as RFC 9110 asks for If-None-Match.
    tags = [tag.removeprefix("W/") for tag in parse_etags(header)]
    return "*" in tags or etag in tags
