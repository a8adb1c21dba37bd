"""Census presets for sampling quotas, and the arithmetic that turns shares into whole-number targets.

Plain Python, no Django. `PRESETS` holds, for each country and axis of the default groups (see
`raters.defaults`), the share of the adult (18+) population in each option, taken from a named public
table or survey (where the only table to hand covers all ages, or voters rather than adults, the preset's
`note` says so). They are starting points for recruitment quotas, not ground truth: an admin should check
each figure against its `source` before relying on it, edit it when a newer release appears, and read the
`note`, which says how the source's categories were mapped onto ours and which figures are approximate.
Shares are renormalised over the listed options, so anyone outside them (other parties, people who did not
vote, and so on) is left out rather than spread across the options by guesswork.

`largest_remainder` rounds shares to whole targets that add up exactly to the sample size, and
`independent_cells` does the same for interlocking cells (one option per axis), assuming the axes are
independent because no joint tables are shipped here.
"""

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class AxisShares:
    """Adult population shares for the options of one axis in one country, with where they come from."""

    shares: dict[str, float]  # option label -> share of adults, summing to 1
    source: str  # table or survey and its year, precise enough to look up
    note: str = ""  # mapping decisions and caveats

    def __post_init__(self) -> None:
        _check_weights(self.shares)
        if abs(sum(self.shares.values()) - 1) > 1e-9:
            raise ValueError(f"shares must sum to 1, not {sum(self.shares.values())!r}")
        if not self.source.strip():
            raise ValueError("a preset needs a source that says where its figures come from")


def _check_weights(shares: Mapping[Key, float | Fraction], where: str = "") -> None:
    for label, value in shares.items():
        if not math.isfinite(value):
            raise ValueError(f"the share for {label!r}{where} is {value!r}; shares must be finite numbers")
        if value < 0:
            raise ValueError(
                f"the share for {label!r}{where} is negative ({value!r}); shares must be 0 or more"
            )
    if sum(shares.values()) <= 0:
        raise ValueError(f"the shares{where} sum to zero; at least one option needs a positive share")


def _preset(percentages: Mapping[str, float], source: str, note: str) -> AxisShares:
    """Build a preset from published percentages, renormalised over the listed options."""
    _check_weights(percentages)
    total = sum(percentages.values())
    return AxisShares({label: value / total for label, value in percentages.items()}, source, note)


_US_AGE = _preset(
    {"18–34": 29.6, "35–54": 32.4, "55+": 38.0},  # noqa: RUF001 - en dashes, as in raters.defaults
    source=(
        "U.S. Census Bureau, 2020 Census (count as of 1 April 2020), population by age for the United "
        "States, from the Demographic and Housing Characteristics File (DHC)"
    ),
    note=(
        "Shares of the 258.3 million residents aged 18 or over. Confirmed: the adult total and the 55.8 "
        "million aged 65 or over (21.6% of adults). Approximate, to about one percentage point: the 55-64 "
        "count added to give 55+, and the split of the younger adults between 18-34 and 35-54; verify them "
        "against the DHC sex-by-age counts, or take a later year from ACS table B01001, whose age groups "
        "add up to these bands. Renormalised over the three bands."
    ),
)

_US_ETHNICITY = _preset(
    {"Asian": 6.2, "Black": 11.7, "White": 60.8, "Other": 21.3},
    source=(
        "U.S. Census Bureau, 2020 Census Redistricting Data (P.L. 94-171), table P4: Hispanic or Latino, "
        "and not Hispanic or Latino by race, for the population 18 years and over"
    ),
    note=(
        "Asian, Black and White are the non-Hispanic single-race ('alone') groups. Other gathers Hispanic "
        "or Latino adults of any race (16.8% of adults), non-Hispanic adults reporting two or more races "
        "(3.3%) and non-Hispanic American Indian and Alaska Native, Native Hawaiian and Other Pacific "
        "Islander and Some Other Race alone. White (60.8%) is derived from published totals: 191.7 million "
        "non-Hispanic White residents of all ages, less the 47.3% of the 73.1 million under-18s who are "
        "non-Hispanic White, over 258.3 million adults. The Black (about 11.7%) and Asian (about 6.2%) "
        "adult shares are approximate and should be verified against table P4. Renormalised over the four "
        "options."
    ),
)

_US_POLITICS = _preset(
    {"Democrat": 28, "Republican": 28, "Independent": 43},
    source=(
        "Gallup, party identification of U.S. adults, 2024 annual average of Gallup telephone polls "
        "(more than 14,000 interviews), published January 2025"
    ),
    note=(
        "The initial party-identification question: 28% Democrat, 28% Republican, 43% independent. "
        "Independents who lean towards a party stay Independent here (with leaners counted as partisans "
        "Gallup reports 45% Democratic and 46% Republican). The remaining 1% or so (other parties, no "
        "answer) is dropped and the three options renormalised. Gallup publishes a new annual average each "
        "January; its 2025 average put independents at 45%, so update these when convenient."
    ),
)

_UK_AGE = _preset(
    {"18–34": 27, "35–54": 33, "55+": 40},  # noqa: RUF001 - en dashes, as in raters.defaults
    source=(
        "Office for National Statistics, Census 2021 (21 March 2021), England and Wales: 'Population and "
        "household estimates, England and Wales: Census 2021' (released 28 June 2022), usual residents by "
        "five-year age group"
    ),
    note=(
        "England and Wales only: Scotland counted in 2022 and Northern Ireland publishes separately "
        "(NISRA), with slightly different age profiles. Shares of usual residents aged 18 or over. "
        "Approximate, to about one percentage point, and to be verified: only the 65+ figure (18.6% of all "
        "residents, about 11.1 million) was confirmed; the 55-64, 35-54 and 18-34 sizes are estimates. The "
        "release's 15-19 band straddles 18, so the 18+ base needs single-year ages (ONS's unrounded "
        "estimates give them). Renormalised over the three bands."
    ),
)

_UK_ETHNICITY = _preset(
    {"Asian": 9.3, "Black": 4.0, "White": 81.7, "Other": 5.0},
    source="Office for National Statistics, Census 2021, England and Wales, table TS021 (Ethnic group)",
    note=(
        "England and Wales only; Scotland and Northern Ireland run their own censuses with other "
        "categories. These are shares of all usual residents, not of adults: adults are somewhat more "
        "often White and much less often Mixed (a young group), so replace them with an ethnic-group-by-age "
        "table for those aged 18 or over when one is to hand. Asian is 'Asian, Asian British or Asian "
        "Welsh'; Black is 'Black, Black British, Black Welsh, Caribbean or African'; White includes every "
        "White group (British, Irish, Gypsy or Irish Traveller, Roma, other White); Other merges 'Mixed or "
        "Multiple ethnic groups' (about 2.9%) with 'Other ethnic group' (2.1%, including Arab). White 81.7%, "
        "Asian 9.3% and Other ethnic group 2.1% were confirmed; the split of the remaining 6.9% into Black "
        "(about 4.0%) and Mixed (about 2.9%) is approximate and should be checked in TS021. Renormalised "
        "over the four options."
    ),
)

_UK_POLITICS = _preset(
    {"Conservative": 23.7, "Labour": 33.7, "Liberal Democrat": 12.2, "Green": 6.7, "Reform": 14.3},
    source=(
        "House of Commons Library, research briefing 'General election 2024 results': UK vote shares at "
        "the general election of 4 July 2024"
    ),
    note=(
        "Shares of votes cast, not of all adults (turnout was about 60%): Labour 33.7%, Conservative 23.7%, "
        "Reform UK 14.3%, Liberal Democrat 12.2%, Green 6.7%, renormalised over these five parties; the SNP, "
        "Plaid Cymru, Northern Ireland parties, independents and others (about 9.4% together) are dropped. "
        "The five parties took almost no votes in Northern Ireland, so Great Britain-only shares "
        "renormalised the same way differ only in rounding. Confirmed against several published copies of "
        "the results, not the Library's own tables; check there whether its Green figure includes the "
        "Scottish Greens. A voting-intention poll series could replace this between elections."
    ),
)

PRESETS: dict[str, dict[str, AxisShares]] = {
    "US": {"age": _US_AGE, "ethnicity": _US_ETHNICITY, "politics": _US_POLITICS},
    "UK": {"age": _UK_AGE, "ethnicity": _UK_ETHNICITY, "politics": _UK_POLITICS},
}


def largest_remainder(shares: Mapping[str, float], total: int) -> dict[str, int]:
    """Whole-number targets proportional to `shares` that add up exactly to `total`.

    Hamilton's (largest remainder) method: every option first gets the whole part of its exact quota
    `total * share / sum(shares)`, then the units still missing go one each to the options with the largest
    fractional parts. No target is a whole unit or more away from its exact quota. Ties go to the option
    listed first in `shares`. Shares need not sum to 1; they are used relative to their sum, computed
    exactly (as fractions) so the result does not depend on float rounding.
    """
    return _hamilton(list(shares.items()), total)


def independent_cells(margins: Mapping[str, Mapping[str, float]], total: int) -> dict[tuple[str, ...], int]:
    """Whole-number targets for interlocking cells: one option from each axis, axes in the order given.

    Each cell's share is the product of its options' marginal shares, which assumes the axes are
    independent of one another. Real populations are not (age, ethnicity and politics are correlated:
    younger adults are more ethnically diverse, for instance), and no joint census tables are shipped here,
    so treat these targets as rough and the marginal shares as the sourced part. The products are rounded
    with `largest_remainder`, so the targets sum exactly to `total`. Each axis's shares are used relative to
    their own sum.
    """
    if not margins:
        raise ValueError("independent_cells needs at least one axis")
    axes = []
    for axis, shares in margins.items():
        _check_weights(shares, where=f" on axis {axis!r}")
        axis_total = sum(Fraction(value) for value in shares.values())
        axes.append([(label, Fraction(value) / axis_total) for label, value in shares.items()])
    cells = [
        (tuple(label for label, _ in combination), math.prod(share for _, share in combination))
        for combination in product(*axes)
    ]
    return _hamilton(cells, total)


def _hamilton(weighted: Sequence[tuple[Key, float | Fraction]], total: int) -> dict[Key, int]:
    if isinstance(total, bool) or not isinstance(total, int):
        raise TypeError(f"total must be a whole number, not {total!r}")
    if total < 0:
        raise ValueError(f"total must be zero or more, not {total}")
    _check_weights(dict(weighted))
    weights = [Fraction(weight) for _, weight in weighted]
    weight_sum = sum(weights)
    quotas = [total * weight / weight_sum for weight in weights]
    targets = [math.floor(quota) for quota in quotas]
    missing = total - sum(targets)
    # Largest fractional part first; among equals, the earlier position wins.
    by_remainder = sorted(range(len(quotas)), key=lambda i: (targets[i] - quotas[i], i))
    for i in by_remainder[:missing]:
        targets[i] += 1
    return {key: target for (key, _), target in zip(weighted, targets, strict=True)}
