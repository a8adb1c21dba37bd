"""The audit trail of staff changes (raters.models.AuditEntry)."""

from typing import Any

from raters.models import AuditEntry


def audit_record(
    *, actor: str, action: str, target: str, before: Any = None, after: Any = None
) -> AuditEntry:
    """Record that `actor` did `action` to `target`, changing it from `before` to `after` (JSON values)."""
    return AuditEntry.objects.create(actor=actor, action=action, target=target, before=before, after=after)
