"""The public read API: boards, models, head-to-head, snapshots (Django REST framework)."""
