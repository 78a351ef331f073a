"""Redaction of a shared branch: the team's strings, the link's redactor, and redacted entries."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q

from treeview.models import AgentSession, ShareLink, TeamSecret
from treeview.redaction import Hit, Redactor
from treeview.services.share.branch import BranchEntry, link_path, load_entries
from treeview.session.jsonl import dumps


def redact_entries(link: ShareLink, entries: Iterable[BranchEntry]) -> Iterator[RedactedEntry]:
    """``entries`` as the link serves them: each hit not in ``link.unmasked`` masked, opaque payloads dropped
    (entries that arrived after a following link was made included)."""
    redactor = link_redactor(link)
    unmasked = set(link.unmasked or ())
    for item in entries:
        redacted = redactor.redact(item.entry, redactor.scan(item.entry), unmasked)
        changed = redacted != item.entry
        yield RedactedEntry(item.entry_id, redacted, dumps(redacted) if changed else item.raw, changed)


def redacted_batches(link: ShareLink, batch: int = 500) -> Iterator[list[RedactedEntry]]:
    """The link's whole branch, redacted, a batch of entries at a time (downloads stream it)."""
    _, path = link_path(link)
    for start in range(0, len(path), batch):
        yield list(redact_entries(link, load_entries(link, path[start : start + batch])))


# -- redaction ---------------------------------------------------------------------------------------------


def team_strings(user: Any, session: AgentSession) -> list[str]:
    """The strings masked in what ``user`` shares of ``session``: the secrets of the user's teams and of the
    teams the session is shared with (single-user mode: every team's)."""
    secrets_ = TeamSecret.objects.all()
    if not settings.ARBOR_SINGLE_USER:
        mine = Q(team__memberships__user=user) if user is not None and user.pk else Q(pk__in=[])
        secrets_ = secrets_.filter(mine | Q(team__sessions=session.pk))
    values = {value for value in secrets_.values_list("value", flat=True) if value}
    return sorted(values)


def redactor_for(user: Any, session: AgentSession) -> Redactor:
    return Redactor(team_strings(user, session))


def link_strings(link: ShareLink) -> list[str]:
    """The team strings a link masks: those in force when it was made (kept with it, so leaving a team or
    a session leaving a team unmasks nothing) and any added since."""
    return sorted(set(link.masked_strings or ()) | set(team_strings(link.created_by, link.session)))


def link_redactor(link: ShareLink) -> Redactor:
    return Redactor(link_strings(link))


def scan_branch(redactor: Redactor, entries: Iterable[BranchEntry]) -> list[Hit]:
    """Every redaction hit of the branch, in order."""
    hits: list[Hit] = []
    for item in entries:
        hits.extend(redactor.scan(item.entry))
    return hits


@dataclass(frozen=True, slots=True)
class RedactedEntry:
    """An entry as a link serves it: ``raw`` is the stored line when redaction changed nothing (byte-exact),
    else the redacted entry serialized as the agent writes JSON."""

    entry_id: str
    entry: dict[str, Any]
    raw: str
    changed: bool


def redact_value(link: ShareLink, value: dict[str, Any]) -> dict[str, Any]:
    """Any other mapping a link serves (the session header, the title), with every hit masked."""
    redactor = link_redactor(link)
    return redactor.redact(value, redactor.scan(value), ())
