from django.urls import path

from leaderboard import personal_views, staff_views, views

app_name = "leaderboard"

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="board"),
    path("leaderboard/models/<slug:slug>/", views.model_detail, name="model"),
    path("leaderboard/methodology/", views.methodology, name="methodology"),
    path("leaderboard/matrices/", views.matrices, name="matrices"),
    path("leaderboard/personal/", personal_views.personal, name="personal"),
    path("leaderboard/personal/mine/", personal_views.personal_mine, name="personal_mine"),
    path("leaderboard/personal/contribute/", personal_views.personal_contribute, name="personal_contribute"),
    path(
        "leaderboard/personal/open-answers/",
        personal_views.personal_open_answers,
        name="personal_open_answers",
    ),
    path(
        "staff/tournaments/<slug:slug>/battles-linked.jsonl",
        staff_views.battles_linked,
        name="staff_battles_linked",
    ),
    path("staff/studies/<slug:study_slug>/boards/", staff_views.study_boards, name="staff_study_boards"),
]
