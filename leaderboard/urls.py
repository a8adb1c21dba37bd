from django.urls import path

from leaderboard import views

app_name = "leaderboard"

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="board"),
]
