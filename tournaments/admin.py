from django.contrib import admin

from tournaments.models import (
    Battle,
    Dimension,
    LLMModel,
    QualityRuleSetting,
    Reply,
    RuleOutcome,
    StaffAction,
    Strike,
    Tournament,
    Turn,
    Vote,
    VoteChoice,
)


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "maker",
        "provider",
        "api_model",
        "is_active",
        "disabled_reason",
        "cooldown_until",
    ]
    list_filter = ["provider", "is_active"]
    readonly_fields = ["consecutive_failures"]
    prepopulated_fields = {"slug": ["name"]}
    fieldsets = [
        (None, {"fields": ["name", "slug", "maker", "is_active"]}),
        ("Endpoint", {"fields": ["provider", "base_url", "api_model", "api_key_env", "timeout_seconds"]}),
        ("Limits, shared by all workers", {"fields": ["max_concurrency", "requests_per_minute"]}),
        (
            "Health",
            {
                "fields": ["disabled_reason", "cooldown_until", "consecutive_failures"],
                "description": "Clear the disabled reason once the provider's quota or settings are fixed.",
            },
        ),
        ("Generation", {"fields": ["system_prompt", "temperature", "max_tokens"]}),
        ("Demo model", {"fields": ["demo_style"]}),
    ]


class DimensionInline(admin.TabularInline):
    model = Dimension
    extra = 0


@admin.register(Tournament)
class TournamentAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "audience", "min_turns", "max_turns", "max_message_chars"]
    list_filter = ["audience"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["llm_models"]
    inlines = [DimensionInline]


class TurnInline(admin.TabularInline):
    model = Turn
    extra = 0
    readonly_fields = ["index", "message", "created_at"]


@admin.register(Battle)
class BattleAdmin(admin.ModelAdmin):
    list_display = ["public_id", "tournament", "model_a", "model_b", "state", "flagged_reason", "created_at"]
    list_filter = ["tournament", "state"]
    readonly_fields = ["public_id", "pair_probability", "created_at", "ended_at"]
    inlines = [TurnInline]


@admin.register(Reply)
class ReplyAdmin(admin.ModelAdmin):
    list_display = ["turn", "side", "state", "attempts", "error", "finished_at"]
    list_filter = ["state"]


class VoteChoiceInline(admin.TabularInline):
    model = VoteChoice
    extra = 0


@admin.register(Vote)
class VoteAdmin(admin.ModelAdmin):
    list_display = ["battle", "created_at", "seconds_to_vote"]
    inlines = [VoteChoiceInline]


@admin.register(QualityRuleSetting)
class QualityRuleSettingAdmin(admin.ModelAdmin):
    list_display = ["rule", "mode", "params", "judge_model"]
    list_editable = ["mode"]


@admin.register(Strike)
class StrikeAdmin(admin.ModelAdmin):
    list_display = ["rater", "rule", "reason", "created_at", "lifted_at"]
    list_filter = ["rule", "rater__study"]
    readonly_fields = ["rater", "rule", "reason", "message", "battle", "vote", "created_at"]

    def has_add_permission(self, request):
        return False  # strikes come from the rules; lifting is on the study's quality page, with a reason


@admin.register(RuleOutcome)
class RuleOutcomeAdmin(admin.ModelAdmin):
    list_display = ["rater", "rule", "failed", "score", "action", "created_at"]
    list_filter = ["rule", "failed", "action"]


@admin.register(StaffAction)
class StaffActionAdmin(admin.ModelAdmin):
    list_display = ["created_at", "staff", "kind", "rater_public_id", "reason"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
