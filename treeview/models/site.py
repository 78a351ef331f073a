"""Site-wide settings an administrator edits (one row)."""

from __future__ import annotations

from django.db import models


class SiteSettings(models.Model):
    """Site-wide switches an admin changes at run time (one row, pk 1)."""

    public_sharing = models.BooleanField(
        default=True, help_text="share links work; off: every link answers 404 and none can be made"
    )

    class Meta:
        verbose_name = "site settings"
        verbose_name_plural = "site settings"

    def __str__(self) -> str:
        return "site settings"

    @classmethod
    def current(cls) -> SiteSettings:
        return cls.objects.get_or_create(pk=1)[0]
