"""`{% load rendering %}`: the `markdown` filter for model replies."""

from django import template
from django.utils.safestring import SafeString

from tournaments.rendering import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown(value: object) -> SafeString:
    """Untrusted markdown (a model reply) as sanitised HTML; None renders as nothing."""
    return render_markdown("" if value is None else str(value))
