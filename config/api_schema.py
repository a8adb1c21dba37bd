"""The OpenAPI schema's side of config/api.py: the error shape under every status an operation can answer
with, and the notes on errors, caching and pagination in the schema's description.

Separate from config/api.py because drf-spectacular imports DRF's generic views, which read the
pagination class from the settings, which lives in config/api.py: one module would import itself.
"""

from drf_spectacular.openapi import AutoSchema
from rest_framework.permissions import AllowAny

from config.api import ErrorSerializer

ERROR_STATUSES = {
    "400": "The request is not valid: a malformed or out-of-range parameter; `details` names the fields.",
    "404": "Nothing is called that: an unknown slug, a page past the last.",
    "429": "Too many requests from this address: wait `Retry-After` seconds.",
    "500": "Something went wrong on our side.",
}
AUTH_ERROR_STATUSES = {
    "401": "No valid credentials were sent.",
    "403": "The credentials are valid but do not allow this.",
}


class ApiAutoSchema(AutoSchema):
    """Adds the error shape, under every status an operation can answer with, to each operation."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        statuses = dict(ERROR_STATUSES)
        if self._requires_authentication():
            statuses.update(AUTH_ERROR_STATUSES)
        if self.method in ("POST", "PUT", "PATCH"):
            statuses["409"] = "The request conflicts with the current state (e.g. already done)."
        for status, description in sorted(statuses.items()):
            if status not in responses:
                response = self._get_response_for_code(ErrorSerializer, status)
                response["description"] = description
                responses[status] = response
        return responses

    def _requires_authentication(self) -> bool:
        return any(not isinstance(p, AllowAny) for p in self.view.get_permissions())


ERROR_DOCUMENTATION = """
## Errors

Every error has one JSON shape, whatever the status:

```json
{"error": {"code": "not_found", "message": "There is no tournament called 'x'.", "details": null}}
```

- `code`: stable, for programs (`invalid_input`, `not_found`, `method_not_allowed`, `not_authenticated`,
  `authentication_failed`, `permission_denied`, `conflict`, `rate_limited`, `server_error`, ...).
- `message`: a sentence for people; its wording may change.
- `details`: per-field messages for invalid input (`{"page_size": ["Must be between 1 and 200."]}`),
  `{"retry_after": seconds}` on 429 (also in the `Retry-After` header), or null.

## Caching

Read responses carry a strong `ETag` and `Cache-Control: public, max-age=60`. Send the ETag back in
`If-None-Match` to get `304 Not Modified` when nothing changed. Board data changes only when a new fit is
published.

## Limits

Requests are limited per client address (by default 600 a minute, and 60 an hour for the tournament
downloads); over the limit the answer is 429 with `Retry-After`. Answers served from the cache are not
counted: the limit guards the work of building an answer.

## Pagination

Lists are paginated: `?page=2&page_size=100` (at most 200 a page), answered as
`{"count", "next", "previous", "results"}`. A board is one snapshot and is never split into pages.
"""


def schema_add_documentation(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: the error, caching and pagination notes in the schema's
    description, where every generated client and docs page shows them."""
    info = result.setdefault("info", {})
    info["description"] = (info.get("description", "") + "\n" + ERROR_DOCUMENTATION).strip()
    return result
