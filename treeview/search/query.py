"""Search queries: parsing what was typed into words and prefixes, and the sessions that match."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from treeview.models import AgentSession

#: Tokens and words of a query beyond these are ignored (a query is typed, not pasted files).
MAX_TOKENS = 16
MAX_WORDS = 16
#: Words shorter than this match whole words only, longer ones every word they start.
MIN_PREFIX = 3
#: At most this many hits of a query are counted and can be paged through: the first ones in the order.
MAX_HITS = 1000


# A word: a run of letters and digits (what FTS5's unicode61 tokenizer keeps; the rest separates words).
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class SearchQuery:
    """A query as typed, its whitespace-separated tokens (lower-cased) and the words full-text search uses."""

    text: str
    tokens: tuple[str, ...]
    words: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def fts5(self) -> str:
        """The FTS5 query: every word as a quoted (prefix) term (implicit AND). Words hold no quote."""
        return " ".join(f'"{word}"*' if is_prefix(word) else f'"{word}"' for word in self.words)

    def tsquery(self) -> str:
        """The ``to_tsquery`` text: every word as a quoted (prefix) lexeme, joined with ``&``."""
        return " & ".join(f"'{word}':*" if is_prefix(word) else f"'{word}'" for word in self.words)


def is_prefix(word: str) -> bool:
    """Whether ``word`` matches every word it starts (else only itself): :data:`MIN_PREFIX` characters on."""
    return len(word) >= MIN_PREFIX


def parse_query(text: str) -> SearchQuery:
    """Tokens (at most :data:`MAX_TOKENS`) and their words (at most :data:`MAX_WORDS`, no repeats)."""
    tokens = tuple(text.lower().split()[:MAX_TOKENS])
    words: list[str] = []
    for token in tokens:
        for word in _WORD.findall(token):
            if word not in words:
                words.append(word)
    return SearchQuery(text, tokens, tuple(words[:MAX_WORDS]))


def matching_sessions(query: SearchQuery, sessions: QuerySet[AgentSession] | None = None) -> Any:
    """Sessions (of ``sessions``, default all) whose title, working directory or id contains every token
    (newest first)."""
    if not query:
        return AgentSession.objects.none()
    condition = Q()
    for token in query.tokens:
        condition &= Q(title__icontains=token) | Q(cwd__icontains=token) | Q(session_id__icontains=token)
    found = (AgentSession.objects.all() if sessions is None else sessions).filter(condition)
    return found.with_first_prompt().newest_first()
