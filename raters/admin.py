from django.contrib import admin

from raters.models import Group, Rater, Study


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ["label", "country", "axis", "slug", "position"]
    list_filter = ["country", "axis"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "tournament", "is_open", "allows_open_entry", "created_at"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ["public_id", "study", "source", "country", "consented_at", "screened_at"]
    list_filter = ["study", "source", "country"]
    readonly_fields = ["public_id", "participant_hash", "panel_session_hash", "created_at"]
    filter_horizontal = ["groups"]
