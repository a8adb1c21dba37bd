"""The k-anonymous coarsening of raters' group combinations (stats.disclosure), alone.

Pass criteria: every non-empty published combination is shared by at least k raters; a combination
shared by k raters is published whole; axes are dropped from the last; what is published is always a
true prefix of the rater's combination.
"""

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from stats.disclosure import combinations_coarsened


def test_it_publishes_a_combination_shared_by_k_raters_whole():
    raters = {n: ("US", "young", "asian", "dem") for n in range(10)}
    assert set(combinations_coarsened(raters, k=10).values()) == {("US", "young", "asian", "dem")}


def test_it_drops_the_last_axes_first_until_k_raters_share_it():
    raters = {n: ("US", "young", "asian", "dem" if n < 5 else "rep") for n in range(10)}
    raters |= {10 + n: ("US", "old", "white", "dem") for n in range(3)}
    published = combinations_coarsened(raters, k=10)
    assert {published[n] for n in range(10)} == {("US", "young", "asian")}
    assert {published[10 + n] for n in range(3)} == {()}  # three raters: nothing about them


@given(
    st.dictionaries(
        st.integers(0, 10_000),
        st.tuples(st.sampled_from("AB"), st.sampled_from("xyz"), st.sampled_from([None, "p", "q", "r"])),
        max_size=200,
    ),
    st.integers(1, 15),
)
def test_every_published_class_has_at_least_k_raters(raters, k):
    published = combinations_coarsened(raters, k=k)
    assert published.keys() == raters.keys()
    sizes = Counter(published.values())
    assert all(size >= k for prefix, size in sizes.items() if prefix)
    assert all(raters[rater][: len(prefix)] == prefix for rater, prefix in published.items())
