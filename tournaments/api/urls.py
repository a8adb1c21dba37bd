"""The rater API, mounted at /api/v1/rater/: token-authenticated clients that run battles with the web
flow's rules."""

from django.urls import path

from tournaments.api import views

app_name = "rater_api"

urlpatterns = [
    path("screener/", views.ScreenerView.as_view(), name="screener"),
    path("raters/", views.RaterCreateView.as_view(), name="raters"),
    path("raters/<uuid:rater_id>/", views.RaterDetailView.as_view(), name="rater"),
    path("raters/<uuid:rater_id>/battle/", views.BattleStartView.as_view(), name="battle_start"),
    path("raters/<uuid:rater_id>/finish/", views.RaterFinishView.as_view(), name="rater_finish"),
    path("battles/<uuid:battle_id>/", views.BattleDetailView.as_view(), name="battle"),
    path("battles/<uuid:battle_id>/turns/", views.TurnCreateView.as_view(), name="turns"),
    path("battles/<uuid:battle_id>/vote/", views.VoteCreateView.as_view(), name="vote"),
]
