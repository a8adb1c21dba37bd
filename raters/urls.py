from django.urls import path

from raters import views

app_name = "raters"

urlpatterns = [
    path("s/<slug:study_slug>/", views.study_entry, name="study_entry"),
    path("rate/", views.rate_open, name="open"),
    path("rate/consent/", views.consent, name="consent"),
    path("rate/screener/", views.screener, name="screener"),
    path("rate/next/", views.next_step, name="next"),
]
