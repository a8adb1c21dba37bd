"""The public read API: boards, models, head-to-head, snapshots (Django REST framework), its schema and
docs, and open-data downloads."""

from django.urls import path

from leaderboard.api import docs, views

app_name = "api"

urlpatterns = [
    path("", views.ApiRoot.as_view(), name="root"),
    path("schema/", docs.SchemaView.as_view(), name="schema"),
    path("docs/", docs.docs, name="docs"),
    path("tournaments/", views.TournamentList.as_view(), name="tournaments"),
    path("tournaments/<slug:slug>/", views.TournamentDetail.as_view(), name="tournament"),
    path("tournaments/<slug:slug>/boards.csv", views.BoardsExportCsv.as_view(), name="export-boards-csv"),
    path("tournaments/<slug:slug>/boards.json", views.BoardsExportJson.as_view(), name="export-boards-json"),
    path("tournaments/<slug:slug>/battles.jsonl", views.BattlesExport.as_view(), name="export-battles-jsonl"),
    path(
        "tournaments/<slug:slug>/quiz-answers.jsonl",
        views.QuizAnswersExport.as_view(),
        name="export-quiz-answers-jsonl",
    ),
    path("dimensions/", views.DimensionList.as_view(), name="dimensions"),
    path("groups/", views.GroupList.as_view(), name="groups"),
    path("models/", views.ModelList.as_view(), name="models"),
    path("models/<slug:slug>/", views.ModelDetail.as_view(), name="model"),
    path("boards/", views.BoardView.as_view(), name="boards"),
    path("head-to-head/", views.HeadToHead.as_view(), name="head-to-head"),
    path("snapshots/", views.SnapshotList.as_view(), name="snapshots"),
]
