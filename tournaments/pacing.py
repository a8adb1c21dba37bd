"""How much of each side's reply a rater may see while the models write: a speed-blind common pace.

Plain Python, no Django. A side that writes faster would give its model away (the reason Populus used to
show nothing until both sides were done), so both sides grow together: each side shows as many characters
as the slowest side still writing has produced, and never more than it has itself. While both write, the
text on both sides grows at the slower side's rate, from the moment the slower side's first text arrives.
Once every side is done, everything is shown. A side that failed counts as still writing with the text it
had, so what was shown before the failure stays shown (text once revealed is never retracted).
"""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SideProgress:
    chars: int  # characters of text produced so far (all of it once finished)
    finished: bool  # the whole reply is in


def revealed_chars(sides: Sequence[SideProgress]) -> list[int]:
    """Characters of each side to show now."""
    if all(side.finished for side in sides):
        return [side.chars for side in sides]
    common = min(side.chars for side in sides if not side.finished)
    return [min(side.chars, common) for side in sides]
