from django.contrib import admin

from leaderboard.models import AppliedVote, Rating


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["model", "dimension", "group", "mu", "sigma", "wins", "losses", "ties", "updated_at"]
    list_filter = ["dimension__tournament", "dimension", "group"]
    readonly_fields = ["mu", "sigma", "wins", "losses", "ties", "updated_at"]


@admin.register(AppliedVote)
class AppliedVoteAdmin(admin.ModelAdmin):
    list_display = ["vote", "applied_at"]
