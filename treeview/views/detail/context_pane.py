"""The Context tab: what the model saw at the selected entry, and the URL of its fragment."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from treeview import context_tab, conversation, explorer
from treeview.views.detail.state import PageState

# -- the context tab ---------------------------------------------------------------------------------------

CONTEXT_TEMPLATE = "treeview/_context.html"


def _context_url(state: PageState, **changes: Any) -> str:
    """The context fragment's address for this page state (the page's parameters and ``end``; opening the tab
    redraws the tree too, so the filter and the search go along)."""
    params: dict[str, Any] = {
        "copy": state.copy,
        "filter": None if state.mode == "default" else state.mode,
        "q": state.query or None,
        "leafId": state.leaf_param or None,
        "targetId": state.target_id,
    }
    params.update(changes)
    query = urlencode({key: value for key, value in params.items() if value is not None and value != ""})
    base = reverse("treeview:session_context", kwargs={"session_id": state.session.session_id})
    return f"{base}?{query}" if query else base


def _context_tab_context(state: PageState, tree: explorer.ExplorerTree) -> dict[str, Any]:
    """The Context tab's data: the LLM context at the target (default: the leaf), one page of its cards."""
    target = state.target_id or state.leaf_id
    llm = tree.memo(
        ("llm", state.session.rules.agent, target),
        lambda: context_tab.llm_context(state.session, tree, target),
    )
    cards, start, stop = llm.page(state.end)
    later = min(len(llm.cards), stop + context_tab.CONTEXT_PAGE)
    return {
        "llm_page_url": state.url(),
        "llm": llm,
        # The entry in words (its row text, shortened): its id goes in the tooltip.
        "llm_target_text": conversation.entry_text(tree, llm.target_id, state.session.rules.agent),
        "llm_cards": cards,
        "llm_start": start,
        "llm_stop": stop,
        "llm_earlier_url": _context_url(state, end=start) if start else None,
        "llm_earlier_link": state.url(tab="context", end=start) if start else None,
        "llm_later_url": _context_url(state, end=later) if stop < len(llm.cards) else None,
        "llm_later_link": state.url(tab="context", end=later) if stop < len(llm.cards) else None,
        "llm_later": len(llm.cards) - stop,
    }
