from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from config.celery_app import enqueue_on_commit
from raters.models import (
    ApiClient,
    AuditEntry,
    Axis,
    Country,
    ErasureRecord,
    Group,
    Quota,
    Rater,
    Study,
)
from raters.services import api_client_revoke, api_token_new, rater_erase


class AxisInline(admin.TabularInline):
    model = Axis
    extra = 0


@admin.register(Country)
class CountryAdmin(admin.ModelAdmin):
    list_display = ["name", "code", "position"]
    inlines = [AxisInline]


class GroupInline(admin.TabularInline):
    model = Group
    extra = 0
    prepopulated_fields = {"slug": ["label"]}


@admin.register(Axis)
class AxisAdmin(admin.ModelAdmin):
    list_display = ["label", "country", "question", "allows_decline", "position"]
    list_filter = ["country"]
    inlines = [GroupInline]


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ["label", "axis", "slug", "position"]
    list_filter = ["axis__country", "axis"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "tournament", "is_open", "allows_open_entry", "panel", "dashboard"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["countries"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "tournament", "is_open", "allows_open_entry", "countries"]}),
        ("Panel", {"fields": ["panel", "external_study_id", "return_url", "count_only_reconciled"]}),
        ("Codes", {"fields": ["completion_code", "screen_out_code", "quota_full_code"]}),
        ("Session", {"fields": ["battles_per_session", "abandon_after_minutes"]}),
        (
            "Sybil friction (entries without a panel id)",
            {
                "fields": [
                    "new_raters_per_network_hour",
                    "honeypot",
                    "proof_of_effort_bits",
                    "practice_battles",
                ]
            },
        ),
    ]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "count_only_reconciled" in form.changed_data:
            # Which raters count on the published boards changed: refit them now, not at the next hour.
            enqueue_on_commit("leaderboard.tasks.publish_fits_for", obj.tournament_id)

    @admin.display(description="Quotas")
    def dashboard(self, study):
        return format_html('<a href="{}">dashboard</a>', reverse("raters:staff_study", args=[study.slug]))


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ["label", "study", "target", "admitted"]
    list_editable = ["target"]
    list_filter = ["study"]
    readonly_fields = ["label", "cell_key", "admitted"]
    exclude = ["groups"]

    def has_add_permission(self, request):
        # Quotas are made from census presets on the study dashboard, which keeps cell keys consistent.
        return False


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ["public_id", "study", "source", "status", "country", "consented_at", "admitted_at"]
    list_filter = ["study", "source", "status", "country"]
    readonly_fields = [
        "public_id",
        "participant_hash",
        "panel_session_hash",
        "status",
        "admitted_at",
        "completed_at",
        "reconciled_at",
        "created_at",
    ]
    filter_horizontal = ["groups"]
    actions = ["erase"]

    @admin.action(description="Erase the selected raters' data and votes (ratings are rebuilt)")
    def erase(self, request, queryset):
        erased = [rater_erase(rater=rater, erased_by=request.user.get_username()) for rater in queryset]
        self.message_user(
            request, f"Erased {len(erased)} rater(s); ratings are being rebuilt.", messages.SUCCESS
        )


@admin.register(ErasureRecord)
class ErasureRecordAdmin(admin.ModelAdmin):
    list_display = ["rater_public_id", "study", "erased_by", "votes_removed", "battles_removed", "erased_at"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: an audit trail nobody can edit or delete from the site."""

    list_display = ["created_at", "actor", "action", "target", "before", "after"]
    list_filter = ["action", "actor"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ApiClient)
class ApiClientAdmin(admin.ModelAdmin):
    """Making a client shows its token once, on the page that answers the save; only its hash is kept, so
    no page can show it again. Revoke by unticking "active" or with the action."""

    list_display = ["name", "kind", "study", "is_active", "created_at", "last_used_at"]
    list_filter = ["kind", "is_active", "study"]
    fields = ["name", "kind", "study", "is_active", "created_at", "last_used_at"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        # A client's raters stay in the study (and on the boards) it was made for.
        return ["kind", "study", "created_at", "last_used_at"] if obj else ["created_at", "last_used_at"]

    def save_model(self, request, obj, form, change):
        if not change:
            # Kept on the request only, for the page below: never in the session or a message cookie.
            request.api_client_token, obj.token_hash = api_token_new()
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        context = {**self.admin_site.each_context(request), "client": obj, "token": request.api_client_token}
        context["opts"] = self.opts
        context["title"] = f"Token for {obj}"
        return TemplateResponse(request, "admin/raters/apiclient/token_created.html", context)

    @admin.action(description="Revoke the selected clients' tokens")
    def revoke(self, request, queryset):
        for client in queryset:
            api_client_revoke(client=client)
        self.message_user(request, f"Revoked {queryset.count()} client(s).", messages.SUCCESS)
