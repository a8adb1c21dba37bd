from django.urls import path

from tournaments import staff_views, views

app_name = "tournaments"

urlpatterns = [
    path("battle/next/", views.battle_next, name="battle_next"),
    path("battle/<uuid:public_id>/", views.battle_detail, name="battle"),
    path("battle/<uuid:public_id>/turn/", views.turn_create, name="turn"),
    path("battle/<uuid:public_id>/vote/", views.vote_create, name="vote"),
    path("battle/<uuid:public_id>/reveal/", views.battle_reveal_page, name="reveal"),
    path("staff/studies/<slug:study_slug>/quality/", staff_views.study_quality, name="staff_quality"),
    path(
        "staff/studies/<slug:study_slug>/reconciliation/",
        staff_views.study_reconciliation_view,
        name="staff_reconciliation",
    ),
    path(
        "staff/studies/<slug:study_slug>/strikes/<int:strike_id>/lift/",
        staff_views.strike_lift_view,
        name="staff_strike_lift",
    ),
    path(
        "staff/studies/<slug:study_slug>/raters/<uuid:rater_id>/exclude/",
        staff_views.rater_exclude_view,
        name="staff_rater_exclude",
    ),
    path(
        "staff/studies/<slug:study_slug>/raters/<uuid:rater_id>/restore/",
        staff_views.rater_restore_view,
        name="staff_rater_restore",
    ),
]
