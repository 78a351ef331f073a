"""The scanner: ``Redactor`` finds, merges and masks the spans of every detector."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from treeview.redaction.context import _context_spans
from treeview.redaction.entries import _resolve, _strings, drop_opaque
from treeview.redaction.entropy import _TOKEN, _high_entropy
from treeview.redaction.formats import _KNOWN, _TOKEN_CHARS
from treeview.redaction.hits import (
    CONTEXT,
    MIN_TEAM_STRING,
    Hit,
    _fingerprint,
    _mask_kind,
    _Span,
    hit_id,
    mask_for,
)
from treeview.redaction.private_keys import _inside, _private_key_spans, _public_blocks


class Redactor:
    """Finds secrets in entry objects and produces masked copies. Safe to share between threads."""

    def __init__(self, team_strings: Sequence[str] = ()) -> None:
        unique = {t for t in team_strings if isinstance(t, str) and len(t.strip()) >= MIN_TEAM_STRING}
        # longest first, so a team string containing another is masked whole
        self.team_strings: tuple[str, ...] = tuple(sorted(unique, key=lambda t: (-len(t), t)))

    # -- public ----------------------------------------------------------------------------------------------

    def scan(self, entry: Mapping[str, Any]) -> list[Hit]:
        """All hits in one entry object, in document order; overlapping detections are merged into one hit."""
        if not isinstance(entry, Mapping):
            return []
        raw_id = entry.get("id")
        entry_id = raw_id if isinstance(raw_id, str) else ("" if raw_id is None else str(raw_id))
        hits: list[Hit] = []
        for path, s, in_key in _strings(entry):
            spans = self.find_spans(s)
            if spans:
                hits.extend(_hits_for(entry_id, path, s, spans, in_key))
        return hits

    def redact(
        self,
        entry: Mapping[str, Any],
        hits: Sequence[Hit] | None = None,
        unmasked: Collection[str] = (),
    ) -> dict[str, Any]:
        """A deep copy of entry with opaque payloads dropped and every hit whose id is not in `unmasked`
        replaced by mask_for(hit); hits=None scans first."""
        if hits is None:
            hits = self.scan(entry)
        out = drop_opaque(entry)
        by_path: dict[tuple[str | int, ...], list[Hit]] = {}
        in_keys: dict[tuple[str | int, ...], list[Hit]] = {}
        for hit in hits:
            if hit.id not in unmasked and hit.secret:
                (in_keys if hit.in_key else by_path).setdefault(hit.path, []).append(hit)
        for path, path_hits in by_path.items():
            parent, key = _resolve(out, path)
            if parent is None:
                continue
            s = parent[key]
            if not isinstance(s, str):
                continue
            parent[key] = _masked(s, path_hits)
        # Keys last, deepest first: renaming a key changes the paths below it, never those above.
        for path in sorted(in_keys, key=len, reverse=True):
            parent, key = _resolve(out, path)
            if isinstance(parent, dict) and isinstance(key, str):
                _rename_key(parent, key, _masked(key, in_keys[path]))
        return out

    # -- detection on one string -----------------------------------------------------------------------------

    def find_spans(self, s: str) -> list[_Span]:
        """Merged, sorted (start, end, kind, priority) spans of secrets in one string."""
        spans: list[_Span] = []
        for team in self.team_strings:
            pos = s.find(team)
            while pos != -1:
                spans.append((pos, pos + len(team), "Team secret", 0))
                pos = s.find(team, pos + len(team))
        if len(s) < 8:
            return _merge(spans)
        for start, end in _private_key_spans(s):
            spans.append((start, end, "Private key", 0))
        for rule in _KNOWN:
            for m in rule.pattern.finditer(s):
                start, end = _group_span(m, rule.group)
                if start >= end:
                    continue
                if rule.confirm is not None:
                    confirmed = rule.confirm(s, start, end)
                    if confirmed is None:
                        continue
                    start, end = confirmed
                if rule.boundary and start > 0 and s[start - 1] in _TOKEN_CHARS:
                    continue  # a known prefix inside a longer word ("task-ant-...")
                if rule.check is not None and not rule.check(s[start:end]):
                    continue
                spans.append((start, end, rule.kind, rule.priority))
        _context_spans(s, spans)
        public = _public_blocks(s)
        for m in _TOKEN.finditer(s):
            if _high_entropy(s, m.start(), m.group()) and not _inside(public, m.start()):
                spans.append((m.start(), m.end(), "High-entropy string", 9))
        return _merge(spans)


def _masked(s: str, hits: Sequence[Hit]) -> str:
    """``s`` with every hit's span replaced by its mask."""
    leftovers = []
    for hit in sorted(hits, key=lambda h: h.start, reverse=True):
        if 0 <= hit.start <= hit.end <= len(s) and s[hit.start : hit.end] == hit.secret:
            s = s[: hit.start] + mask_for(hit) + s[hit.end :]
        else:  # stale span (hits from another scan): mask the text wherever it is
            leftovers.append(hit)
    for hit in leftovers:
        s = s.replace(hit.secret, mask_for(hit))
    return s


def _rename_key(mapping: dict[str, Any], old: str, new: str) -> None:
    """Rename a key in place, keeping the order; a masked key that collides with another gets a number."""
    if new == old:
        return
    candidate, n = new, 1
    while candidate in mapping:
        n += 1
        candidate = f"{new} ({n})"
    items = list(mapping.items())
    mapping.clear()
    for k, v in items:
        mapping[candidate if k == old else k] = v


def _group_span(m: re.Match[str], group: int | None) -> tuple[int, int]:
    if group is not None:
        return m.span(group)
    if m.re.groups:
        for g in range(1, m.re.groups + 1):
            if m.group(g):
                return m.span(g)
    return m.span()


def _merge(spans: list[_Span]) -> list[_Span]:
    if len(spans) < 2:
        return spans
    spans.sort()
    merged = [spans[0]]
    for start, end, kind, prio in spans[1:]:
        m_start, m_end, m_kind, m_prio = merged[-1]
        if start < m_end:
            if prio < m_prio:
                m_kind, m_prio = kind, prio
            merged[-1] = (m_start, max(end, m_end), m_kind, m_prio)
        else:
            merged.append((start, end, kind, prio))
    return merged


def _hits_for(
    entry_id: str, path: tuple[str | int, ...], s: str, spans: list[_Span], in_key: bool = False
) -> Iterator[Hit]:
    for i, (start, end, kind, _prio) in enumerate(spans):
        secret = s[start:end]
        yield Hit(
            id=hit_id(entry_id, kind, secret),
            entry_id=entry_id,
            path=path,
            start=start,
            end=end,
            kind=kind,
            fingerprint=_fingerprint(secret),
            before=_before(s, spans, i),
            secret=secret,
            after=_after(s, spans, i),
            in_key=in_key,
        )


def _before(s: str, spans: list[_Span], i: int) -> str:
    """Up to CONTEXT characters before span i, with earlier secrets shown masked."""
    lo = max(0, spans[i][0] - CONTEXT)
    parts = []
    pos = spans[i][0]
    j = i - 1
    while j >= 0 and spans[j][1] > lo:
        parts.append(s[spans[j][1] : pos])
        parts.append(_mask_kind(spans[j][2]))
        pos = spans[j][0]
        j -= 1
    if pos > lo:
        parts.append(s[lo:pos])
    return "".join(reversed(parts))


def _after(s: str, spans: list[_Span], i: int) -> str:
    hi = min(len(s), spans[i][1] + CONTEXT)
    parts = []
    pos = spans[i][1]
    j = i + 1
    while j < len(spans) and spans[j][0] < hi:
        parts.append(s[pos : spans[j][0]])
        parts.append(_mask_kind(spans[j][2]))
        pos = spans[j][1]
        j += 1
    if pos < hi:
        parts.append(s[pos:hi])
    return "".join(parts)


def scan_entries(entries: Iterable[Mapping[str, Any]], team_strings: Sequence[str] = ()) -> list[Hit]:
    """Hits of every entry, in order (one Redactor for all)."""
    redactor = Redactor(team_strings)
    hits: list[Hit] = []
    for entry in entries:
        hits.extend(redactor.scan(entry))
    return hits
