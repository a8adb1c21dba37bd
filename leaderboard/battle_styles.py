"""Each battle's reply style (stats.style), derived once from its replies and stored (BattleStyle), and
the style covariates of a set of battles for a fit: what the published style-controlled fits and the
quiz's style-controlled model both read."""

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from leaderboard.models import BattleStyle
from stats.style import SideStyle, battle_style, side_style, style_matrix
from tournaments.models import Reply

STYLE_CHUNK = 2000


def battle_styles_ensure(*, battle_ids: Sequence[int]) -> dict[int, tuple[SideStyle, SideStyle]]:
    """Each battle's style counts per side (A, B), derived from its replies (with whether each was cut off
    at its length limit) the first time they are needed, and stored (BattleStyle)."""
    wanted = set(battle_ids)
    stored = {
        row.battle_id: (SideStyle(**row.side_a), SideStyle(**row.side_b))
        for row in BattleStyle.objects.filter(battle_id__in=wanted)
    }
    missing = sorted(wanted - set(stored))
    for start in range(0, len(missing), STYLE_CHUNK):
        chunk = missing[start : start + STYLE_CHUNK]
        texts: dict[tuple[int, str], list[str]] = defaultdict(list)
        cut: dict[tuple[int, str], list[bool]] = defaultdict(list)
        for battle_id, side, content, cut_off in (
            Reply.objects.filter(turn__battle_id__in=chunk)
            .order_by("turn__index")
            .values_list("turn__battle_id", "side", "content", "cut_off")
        ):
            texts[(battle_id, side)].append(content)
            cut[(battle_id, side)].append(cut_off)
        derived = {
            battle_id: tuple(
                side_style(texts[(battle_id, side)], cut[(battle_id, side)]) for side in ("a", "b")
            )
            for battle_id in chunk
        }
        BattleStyle.objects.bulk_create(
            [BattleStyle(battle_id=b, side_a=vars(a), side_b=vars(bb)) for b, (a, bb) in derived.items()],
            ignore_conflicts=True,
        )
        stored.update(derived)
    return {b: stored[b] for b in battle_ids}


def replies_stored(*, tournament) -> bool:
    """Whether any battle of the tournament has replies: one with none at all (an imported battle log)
    has no style to control for, and its battles need no style derived."""
    return Reply.objects.filter(turn__battle__tournament=tournament).exists()


def battle_covariates(*, battle_ids: Sequence[int]) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """The style covariates of these battles for a fit, one row per id (an id may repeat), the features
    kept and their scales: ``stats.style.style_matrix`` of the battles' A-minus-B differences."""
    styles = battle_styles_ensure(battle_ids=battle_ids)
    return style_matrix([battle_style(*styles[b]) for b in battle_ids])
