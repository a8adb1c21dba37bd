"""The API's body parser, in a module of its own: the settings name it, and config.api imports DRF's
generic views, which read the settings (an import cycle)."""

from rest_framework import exceptions
from rest_framework.parsers import JSONParser


class ApiJSONParser(JSONParser):
    """DRF's JSON parser, but JSON nested deeper than the interpreter's recursion limit (a few kilobytes
    of `[[[[…` suffice) is a 400 like any other unreadable body, not a RecursionError and a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the body is nested too deeply.") from None
