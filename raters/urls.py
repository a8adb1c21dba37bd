from django.urls import path

from raters import staff_views, views

app_name = "raters"

urlpatterns = [
    path("s/<slug:study_slug>/", views.study_entry, name="study_entry"),
    path("rate/", views.rate_open, name="open"),
    path("rate/consent/", views.consent, name="consent"),
    path("rate/screener/", views.screener, name="screener"),
    path("rate/next/", views.next_step, name="next"),
    path("staff/studies/", staff_views.study_list, name="staff_studies"),
    path("staff/studies/<slug:study_slug>/", staff_views.study_dashboard, name="staff_study"),
    path("staff/studies/<slug:study_slug>/quotas.csv", staff_views.study_quotas_csv, name="staff_study_csv"),
    path("staff/studies/<slug:study_slug>/open/", staff_views.study_set_open, name="staff_study_open"),
    path(
        "staff/studies/<slug:study_slug>/reconcile/",
        staff_views.study_reconcile,
        name="staff_study_reconcile",
    ),
    path(
        "staff/studies/<slug:study_slug>/preset/", staff_views.study_apply_preset, name="staff_study_preset"
    ),
    path(
        "staff/studies/<slug:study_slug>/quotas/<int:quota_id>/target/",
        staff_views.quota_set_target,
        name="staff_quota_target",
    ),
]
