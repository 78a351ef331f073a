"""The admin: users (Django's), teams and their members, invites, and who sees each session."""

from __future__ import annotations

from django.contrib import admin

from treeview.models import AgentSession, Invite, Membership, Team


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

    def has_add_permission(self, request: object) -> bool:
        return False
