from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from config import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path(settings.ADMIN_URL_PATH, admin.site.urls),
    path("", include("raters.urls")),
    path("", include("tournaments.urls")),
    path("", include("leaderboard.urls")),
    path("api/v1/", include("leaderboard.api.urls")),
    path("api/v1/rater/", include("tournaments.api.urls")),
]
