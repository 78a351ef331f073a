"""The admin: users (Django's), teams and their members, invites, and who sees each session."""

from __future__ import annotations

from django.contrib import admin

from treeview.models import (
    AgentSession,
    Invite,
    Membership,
    SessionGrant,
    ShareLink,
    SiteSettings,
    Team,
    TeamSecret,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    """Invites are created at /accounts/invites/ (the link is shown once); here they are listed and revoked
    (delete)."""

    list_display = ["pk", "note", "created_by", "created_at", "expires_at", "used_at", "used_by"]
    readonly_fields = ["token_hash", "created_by", "created_at", "used_at", "used_by"]
    fields = ["note", "expires_at", *readonly_fields]

    def has_add_permission(self, request: object) -> bool:
        return False


class SessionGrantInline(admin.TabularInline):
    """Who the owner lets write to the session ("People and rights" on the session page)."""

    model = SessionGrant
    fk_name = "session"
    extra = 0
    autocomplete_fields = ["user"]
    readonly_fields = ["granted_by", "created_at"]


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    """Only who owns and sees a session is edited here; its content comes from the file."""

    list_display = ["session_id", "title", "cwd", "owner", "visibility"]
    list_filter = ["visibility"]
    search_fields = ["session_id", "title", "cwd"]
    fields = ["session_id", "title", "cwd", "source_path", "owner", "visibility", "teams"]
    readonly_fields = ["session_id", "title", "cwd", "source_path"]
    autocomplete_fields = ["owner"]
    filter_horizontal = ["teams"]
    inlines = [SessionGrantInline]

    def has_add_permission(self, request: object) -> bool:
        return False


# -- sharing (treeview/views/share.py makes and revokes links; the admin lists them) ------------------------


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    """Links are made from a session page (the token is shown once); here they are listed and revoked."""

    list_display = ["lookup", "session", "created_by", "created_at", "expires_at", "view_count", "revoked_at"]
    list_filter = ["follows"]
    search_fields = ["lookup", "note", "session__session_id", "created_by__username"]
    readonly_fields = [
        "lookup",
        "token_hash",
        "session",
        "created_by",
        "created_at",
        "leaf_id",
        "target_id",
        "filter_mode",
        "query",
        "follows",
        "frozen_seq",
        "view_count",
        "last_viewed_at",
        "unmasked",
        "redactions",
        "revoked_by",
    ]
    fields = ["note", "expires_at", "max_views", "revoked_at", *readonly_fields]

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(TeamSecret)
class TeamSecretAdmin(admin.ModelAdmin):
    """Strings a team wants masked in what its members share; the list never shows them in clear."""

    list_display = ["label_or_pk", "team", "masked_value", "created_by", "created_at"]
    list_filter = ["team"]
    readonly_fields = ["created_by", "created_at"]

    @admin.display(description="label")
    def label_or_pk(self, obj: TeamSecret) -> str:
        return obj.label or f"secret {obj.pk}"

    @admin.display(description="value")
    def masked_value(self, obj: TeamSecret) -> str:
        return f"{'•' * 8} ({len(obj.value or '')} characters)"

    def save_model(self, request: object, obj: TeamSecret, form: object, change: bool) -> None:
        if not change and obj.created_by_id is None:
            obj.created_by = getattr(request, "user", None)
        super().save_model(request, obj, form, change)


@admin.register(SiteSettings)
class SiteSettingsAdmin(admin.ModelAdmin):
    list_display = ["__str__", "public_sharing"]

    def has_add_permission(self, request: object) -> bool:
        return not SiteSettings.objects.exists()

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False
