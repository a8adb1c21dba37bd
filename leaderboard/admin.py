from django.contrib import admin

from leaderboard.models import AppliedVote, Rating, TournamentBoards
from leaderboard.tasks import publish_fits_for


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["model", "dimension", "group", "mu", "sigma", "wins", "losses", "ties", "updated_at"]
    list_filter = ["dimension__tournament", "dimension", "group"]
    readonly_fields = ["mu", "sigma", "wins", "losses", "ties", "updated_at"]


@admin.register(AppliedVote)
class AppliedVoteAdmin(admin.ModelAdmin):
    list_display = ["vote", "applied_at"]


@admin.register(TournamentBoards)
class TournamentBoardsAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "audience"]
    actions = ["publish_fits"]

    def has_add_permission(self, request):
        return False  # tournaments are made under Tournaments; this page publishes their boards

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Fit and publish the boards now", permissions=["view"])
    def publish_fits(self, request, queryset):
        for tournament in queryset:
            publish_fits_for.delay(tournament.pk)
        self.message_user(request, f"Publishing started for {queryset.count()} tournament(s).")
