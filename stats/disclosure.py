"""Statistical disclosure control for published microdata (no Django).

A rater's combination of answers (country, age, ethnicity, politics) can single them out when few
raters share it. `combinations_coarsened` publishes each rater's combination only where at least `k`
raters are published with exactly the same combination, coarsening by dropping axes from the last until
that holds: every published class has at least `k` members (k-anonymity of the published attributes).
"""

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence


def combinations_coarsened(
    combinations: Mapping[Hashable, Sequence[Hashable]], *, k: int
) -> dict[Hashable, tuple]:
    """Each key's published prefix of its combination.

    `combinations` maps each rater to their values in coarsening order: the first is kept longest, the
    last dropped first (None stands for an unanswered or unpublished axis and is part of the class).
    From the full length down, raters still unplaced are grouped by their prefix of that length; a
    prefix shared by at least `k` of them is published for all of them. Whoever is left at the end is
    published with the empty prefix, which says nothing about them.
    """
    remaining = dict(combinations)
    published: dict[Hashable, tuple] = {}
    longest = max((len(values) for values in combinations.values()), default=0)
    for length in range(longest, 0, -1):
        classes: dict[tuple, list] = defaultdict(list)
        for rater, values in remaining.items():
            if len(values) >= length:
                classes[tuple(values[:length])].append(rater)
        for prefix, members in classes.items():
            if len(members) >= k:
                for rater in members:
                    published[rater] = prefix
                    del remaining[rater]
    for rater in remaining:
        published[rater] = ()
    return published
