from django.urls import path

from leaderboard import personal_views, views

app_name = "leaderboard"

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="board"),
    path("leaderboard/models/<slug:slug>/", views.model_detail, name="model"),
    path("leaderboard/methodology/", views.methodology, name="methodology"),
    path("leaderboard/matrices/", views.matrices, name="matrices"),
    path("leaderboard/personal/", personal_views.personal, name="personal"),
]
