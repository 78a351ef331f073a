"""``{% review_badge statuses entry_id %}``: a tree row's review status, when its branch has one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import format_html

from treeview.models import ReviewStatus

register = template.Library()

_LABELS = dict(ReviewStatus.Status.choices)


@register.simple_tag
def review_badge(statuses: Mapping[str, str] | None, entry_id: Any) -> str:
    status = statuses.get(entry_id) if statuses else None
    if not status or status == ReviewStatus.Status.UNREVIEWED:
        return ""
    return format_html(
        ' <span class="review-badge review-{}" data-review-status="{}" title="{}">{}</span>',
        status,
        status,
        "review status of this branch",
        _LABELS.get(status, status),
    )
