"""The maths of Populus, testable alone: no Django here, and nothing here imports the apps.

- btd: the Bradley-Terry-Davidson fit with shrunk group offsets;
- posterior: a population's board drawn from that fit's Laplace posterior, and stored posteriors;
- summaries: intervals, shared ranks, rank intervals and P(best) from score draws;
- poststrat: raking sample cells to census margins;
- census: census presets and the arithmetic of quota targets;
- trueskill: the live rating's closed-form update;
- matchmaker: the posterior and policy that choose the next pair.

The apps call these; `tests/test_architecture.py` checks that they import no Django. Top-level rather
than inside `leaderboard/`, because `tournaments` (the matchmaker) and `raters` (census targets) use them
too, and a package inside the highest app would make them import upward.
"""
