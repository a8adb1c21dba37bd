"""How much of each side's reply a rater may see while the models write: a speed-blind common pace.

Plain Python, no Django. A side that writes or finishes first would give its model away (the reason
Populus used to show nothing until both sides were done), so what a rater sees grows on both sides at the
same moments, by the same number of characters, and reaches each side's whole text in the same poll:

1. While no side is done, both sides show the same number of characters: what the slowest side has
   produced, less its last HOLD_CHARS (`common_chars`).
2. When the first side finishes, the display stops growing on both sides, at the common count of that
   moment (`frozen_chars`, stored with the turn), until the last side finishes. Were the other side to
   go on growing, a side stopping while the other grows would show which finished first.
3. Once every side is done, everything is shown, on both sides at once.

The frozen count is taken from the finishing side's text as stored *before* its final words, and less
HOLD_CHARS, so the finishing side also gets new text in the final reveal, as the side still writing does:
nothing shown before the end marks a side as complete. Text once shown is never taken back: the counts
only grow, since stored text only grows; a side that failed keeps the text it had.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A side's last characters are held back until the whole turn is in, so no side is ever shown whole
# (and so seen to be done) while the other writes. About two words.
HOLD_CHARS = 12


@dataclass(frozen=True)
class SideProgress:
    chars: int  # characters of text produced and stored so far (all of it once finished)
    finished: bool  # the whole reply is in


def common_chars(produced: Iterable[int]) -> int:
    """Characters both sides may show while every side is still writing."""
    return max(0, min(produced) - HOLD_CHARS)


def frozen_chars(*, finishing_side_stored: int, other_sides_stored: Iterable[int]) -> int:
    """The count shown from the moment the first side finishes until the last one does: the common count
    just before the finish (from the finishing side's text as last stored while it was writing)."""
    return common_chars([finishing_side_stored, *other_sides_stored])


def revealed_chars(sides: Sequence[SideProgress], *, frozen: int | None = None) -> list[int]:
    """Characters of each side to show now; `frozen` is the count fixed when the first side finished."""
    if all(side.finished for side in sides):
        return [side.chars for side in sides]
    shown = frozen if frozen is not None else common_chars(side.chars for side in sides)
    # A side's stored text is at least the frozen count (it only grows); the cap is a guard, not a rule.
    return [min(shown, side.chars) for side in sides]
