"""What the people's side tells the apps above it, without importing them.

- `rater_erasing(rater)`: sent inside the erasure's transaction, with the rater row locked and before it
  is deleted. Each receiver deletes what its app holds about the rater and returns a dict of counts
  (e.g. {"battles": 3, "votes": 2}), which the erasure's audit record adds up.
"""

from django.dispatch import Signal

rater_erasing = Signal()
