"""Rater API clients authenticate with `Authorization: Bearer <token>`; the token names an `ApiClient`."""

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from raters.models import ApiClient
from raters.services import api_client_authenticate


class ApiClientAuthentication(BaseAuthentication):
    """`request.auth` is the client; `request.user` stays anonymous, since a client is not a site user.

    No header means "not authenticated" (401 from the permission); a malformed, unknown or revoked token
    is refused outright (401), with the same message for all three so tokens cannot be probed.
    """

    keyword = "bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.encode():
            return None
        try:
            token = parts[1].decode() if len(parts) == 2 else ""
        except UnicodeDecodeError:
            token = ""
        client = api_client_authenticate(token=token) if token else None
        if client is None:
            raise AuthenticationFailed("This token is not valid or has been revoked.")
        return AnonymousUser(), client

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (with this challenge), not 403, when credentials are missing.
        return 'Bearer realm="rater-api"'


class IsApiClient(BasePermission):
    message = "Send an API client's token as `Authorization: Bearer <token>`."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ApiClient)


class ApiClientAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer token in the OpenAPI schema (registered by being defined)."""

    target_class = ApiClientAuthentication
    name = "raterApiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API client's token, shown once when the client is made "
            "(`manage.py create_api_client`, or the admin).",
        }
