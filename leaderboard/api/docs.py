"""The OpenAPI schema and a documentation page rendered from it on the server.

The page is plain HTML under the site's layout: no Swagger UI or Redoc, whose scripts and injected
styles would need either an outside CDN or a looser content security policy. It lists every operation
with its parameters and responses, and every component with its fields, straight from the schema, so
it cannot drift from what the API does.
"""

import functools

from django.http import HttpRequest
from django.shortcuts import render
from django.views.decorators.http import require_safe
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from config.api import PublicReadMixin, conditional_response
from leaderboard import exports
from tournaments.rendering import render_markdown

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
SCHEMA_CONTENT_TYPE = "application/vnd.oai.openapi+json"


@functools.cache
def api_schema() -> dict:
    """The OpenAPI 3 schema of every API view. It depends on the code only, so it is made once per
    process (and not from a request: nothing in it depends on the host that asked)."""
    return SchemaGenerator().get_schema(request=None, public=True)


class SchemaView(PublicReadMixin, APIView):
    @extend_schema(exclude=True)
    def get(self, request):
        return conditional_response(request, api_schema, content_type=SCHEMA_CONTENT_TYPE, max_age=3600)


@require_safe
def docs(request: HttpRequest):
    schema = api_schema()
    context = {
        "info": schema["info"],
        "description": render_markdown(schema["info"].get("description", "")),
        "sections": _sections(schema),
        "components": _components(schema),
        "open_data": render_markdown(exports.__doc__),
    }
    return render(request, "api/docs.html", context)


def _sections(schema: dict) -> list[dict]:
    """Operations grouped by their first tag, in the order the tags first appear."""
    sections: dict[str, list[dict]] = {}
    for path, item in schema.get("paths", {}).items():
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            tag = (operation.get("tags") or ["api"])[0]
            sections.setdefault(tag, []).append(_operation(path, method, operation))
    return [{"tag": tag, "operations": operations} for tag, operations in sections.items()]


def _operation(path: str, method: str, operation: dict) -> dict:
    return {
        "id": operation.get("operationId", f"{method}-{path}"),
        "method": method.upper(),
        "path": path,
        "description": render_markdown(operation.get("description", "")),
        "parameters": [
            {
                "name": parameter["name"],
                "location": parameter.get("in", ""),
                "required": parameter.get("required", False),
                "type": _type(parameter.get("schema", {})),
                "description": parameter.get("description", ""),
            }
            for parameter in operation.get("parameters", [])
        ],
        "responses": [
            {
                "status": status,
                "description": response.get("description", ""),
                "media": [
                    {
                        "type": media_type,
                        "schema": _type(media.get("schema", {})),
                        "ref": _ref(media.get("schema", {})),
                    }
                    for media_type, media in response.get("content", {}).items()
                ],
            }
            for status, response in sorted(operation.get("responses", {}).items())
        ],
    }


def _components(schema: dict) -> list[dict]:
    components = []
    for name, component in sorted(schema.get("components", {}).get("schemas", {}).items()):
        required = set(component.get("required", []))
        components.append(
            {
                "name": name,
                "description": component.get("description", ""),
                "type": _type(component) if "properties" not in component else "object",
                "fields": [
                    {
                        "name": field,
                        "type": _type(definition),
                        "ref": _ref(definition),
                        "required": field in required,
                        "description": definition.get("description", ""),
                    }
                    for field, definition in component.get("properties", {}).items()
                ],
            }
        )
    return components


def _ref(schema: dict) -> str | None:
    """The component a schema names, directly or as its items or its one allOf part, for a link."""
    for candidate in (schema, schema.get("items", {}), *schema.get("allOf", [])[:1]):
        if "$ref" in candidate:
            return candidate["$ref"].rsplit("/", 1)[-1]
    return None


def _type(schema: dict) -> str:
    """A short human name for a JSON schema: `Board`, `array of Pair`, `integer ≥ 1`, `string|null`."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for combiner in ("allOf", "oneOf", "anyOf"):
        if combiner in schema:
            return " | ".join(_type(part) for part in schema[combiner])
    kind = schema.get("type", "any")
    if kind == "array":
        name = f"array of {_type(schema.get('items', {}))}"
    elif "enum" in schema:
        name = " | ".join(repr(value) for value in schema["enum"] if value is not None)
    else:
        name = kind + (f" ({schema['format']})" if "format" in schema else "")
    if "minimum" in schema:
        name += f" ≥ {schema['minimum']}"
    if "maximum" in schema:
        name += f" ≤ {schema['maximum']}"
    if schema.get("nullable"):
        name += " or null"
    return name
