"""What the battle flow tells the apps above it, without importing them (the ratings listen).

- `vote_recorded(vote_id)`: sent inside the transaction that stored a vote; the vote is to be applied.
- `counted_votes_changed(tournament_ids)`: sent inside the transaction that changed which votes of these
  tournaments count (a rater excluded or reinstated, battles erased, a log imported): ratings derived
  from them must be rebuilt once it commits.
"""

from django.dispatch import Signal

vote_recorded = Signal()
counted_votes_changed = Signal()
