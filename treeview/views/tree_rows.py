"""The tree pane's rows as HTML, built in Python: the page draws a few hundred of them, the rows endpoint a
hundred at a time, and every key preview draws them again, so a row costs a few string joins, not a template
with a dozen lookups (about 1 ms a row). The markup is the ``tree-row`` partial's of
templates/treeview/session_detail.html, which documents it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.utils.html import conditional_escape, escape
from django.utils.safestring import SafeString, mark_safe

from treeview.templatetags.arbor_review import review_badge

if TYPE_CHECKING:
    from treeview.views.detail import RowItem


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


def row_html(item: RowItem, selected_id: Any, statuses: Mapping[str, str] | None) -> SafeString:
    """One ``<li role="treeitem">`` of the tree pane."""
    row = item.row
    selected = row.id == selected_id
    classes = "tree-row" + (" selected" if selected else "") + (" active" if row.active else "")
    classes += " leaf" if row.is_leaf else ""
    parent = row.flat.entry.get("parentId")
    # The turn jumps (Alt+Up / Alt+Down) look for user and assistant rows.
    role = f' data-role="{escape(row.role)}"' if row.role in ("user", "assistant") else ""
    parts = [
        f'<li role="treeitem" data-entry-id="{escape(row.id)}" aria-level="{row.display_indent + 1}" '
        f'aria-selected="{"true" if selected else "false"}" '
        f'data-parent-id="{"" if parent is None else escape(parent)}" class="{classes}" '
        f'data-index="{item.index}"{role}><a href="{escape(item.url)}" title="{escape(row.text)}">'
    ]
    if item.folded:
        parts.append(f'<span class="tree-depth" aria-hidden="true">…{item.folded}</span>')
    bullet = "• " if row.active else ""
    parts.append(f'<span class="tree-prefix" aria-hidden="true">{escape(item.prefix)}{bullet}</span>')
    if row.label:
        parts.append(f'<span class="label-chip">{escape(row.label)}</span> ')
        label_time = getattr(row.flat.node, "label_time", None)
        if label_time:
            # When the label was set: shown by Shift+T (explorer.js writes it in local time, as pi does).
            parts.append(f'<time class="label-time" datetime="{escape(label_time)}"></time>')
    parts.append(f'<span class="tree-text">{escape(row.content)}</span>')
    if statuses:
        parts.append(conditional_escape(review_badge(statuses, row.id)))
    counts = item.comments
    if counts:
        open_class = " comment-count-open" if counts.open_threads else ""
        title = (
            f"{counts.comments} comment{_plural(counts.comments)}, "
            f"{counts.open_threads} open thread{_plural(counts.open_threads)}"
        )
        parts.append(f' <span class="comment-count{open_class}" title="{title}">💬 {counts.comments}</span>')
    if row.is_leaf:
        parts.append(' <span class="leaf-marker" title="current leaf">← leaf</span>')
    parts.append("</a></li>")
    return mark_safe("".join(parts))  # noqa: S308 (every value above is escaped)
