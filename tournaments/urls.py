from django.urls import path

from tournaments import views

app_name = "tournaments"

urlpatterns = [
    path("battle/next/", views.battle_next, name="battle_next"),
    path("battle/<uuid:public_id>/", views.battle_detail, name="battle"),
    path("battle/<uuid:public_id>/turn/", views.turn_create, name="turn"),
    path("battle/<uuid:public_id>/vote/", views.vote_create, name="vote"),
    path("battle/<uuid:public_id>/reveal/", views.battle_reveal_page, name="reveal"),
]
