"""Sessions: ``AgentSession`` (one imported file), its queries, and the rules detected for it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from functools import cached_property
from typing import Any

import orjson
from django.conf import settings
from django.db import models
from django.db.models import Q

from treeview.lru import LruCache
from treeview.models.teams import Team
from treeview.session.agents import AGENTS, AgentDecision, check_agent, detect_agent

#: How much of the first prompt an unnamed session shows as its title.
TITLE_CHARS = 80


class AgentSessionQuerySet(models.QuerySet["AgentSession"]):
    def for_path(self, path: str) -> AgentSessionQuerySet:
        return self.filter(source_path=path)

    def by_session_id(self, session_id: str) -> AgentSession | None:
        """The session with this header id; of several copies, the one synced last."""
        return self.filter(session_id=session_id).order_by("-synced_at", "-pk").first()

    def newest_first(self) -> AgentSessionQuerySet:
        return self.order_by(models.F("last_timestamp").desc(nulls_last=True), "-id")

    def in_project(self, cwd: str) -> AgentSessionQuerySet:
        """The sessions started in this working directory ("": those without one)."""
        return self.filter(cwd=cwd)

    def active_between(self, since: date | None, until: date | None) -> AgentSessionQuerySet:
        """Sessions whose last activity falls on these days (both inclusive, either open)."""
        sessions = self
        if since is not None:
            sessions = sessions.filter(last_timestamp__date__gte=since)
        if until is not None:
            sessions = sessions.filter(last_timestamp__date__lte=until)
        return sessions

    def costing_at_least(self, dollars: float) -> AgentSessionQuerySet:
        return self.filter(cost__gte=dollars)

    def projects(self) -> list[str]:
        """The distinct working directories of these sessions, sorted."""
        return sorted(set(self.order_by().values_list("cwd", flat=True).distinct()))

    def with_first_prompt(self) -> AgentSessionQuerySet:
        """Annotate ``first_prompt``: the first user message's row text (an unnamed session's title)."""
        from treeview.models.entries import Entry  # (entries.py imports this module)

        first = (
            Entry.objects.filter(session=models.OuterRef("pk"), type="message", role="user")
            .order_by("seq")
            .values("text")[:1]
        )
        return self.annotate(first_prompt=models.Subquery(first))


class SubagentKind(models.TextChoices):
    NONE = "", "session"
    TASK = "task", "subagent"
    ADVISOR = "advisor", "advisor"
    CLONE = "clone", "/tan clone"


# The detected rules per session state (AgentSession.detected_rules).
_detected: LruCache[tuple[Any, ...], AgentDecision] = LruCache(256)


def rules_name(decision: AgentDecision) -> str:
    """A rule set as the session page names it, with the reason: "oh-my-pi 18 rules (title slot)"."""
    name = "pi 1.6" if decision.agent == "pi" else "oh-my-pi 18"
    return f"{name} rules ({decision.reason})"


class AgentSession(models.Model):
    """One session file: its header, where it came from, what was imported, and the totals the list shows."""

    class Agent(models.TextChoices):
        PI = "pi", "pi"
        OMP = "omp", "oh-my-pi"

    class Visibility(models.TextChoices):
        PRIVATE = "private", "private: the owner only"
        TEAMS = "teams", "the owner and the chosen teams"
        SIGNED_IN = "signed_in", "everyone signed in"

    # Not unique: the same session can exist as two files (pi's original and omp's migrated copy, a backup).
    session_id = models.CharField(max_length=200, db_index=True)
    header_raw = models.TextField(help_text="the header line exactly as in the file")
    prefix_raw = models.TextField(blank=True, help_text="everything before the header: title slot line, BOM")
    title_slot_raw = models.TextField(blank=True, help_text="omp v16+ title slot line (§20.1), if any")
    title = models.CharField(max_length=500, blank=True)
    cwd = models.TextField(blank=True)
    agent = models.CharField(max_length=8, choices=Agent.choices, default=Agent.OMP)
    # Whose rules the session is read by when a user chose them ("" : detected from the file, see ``rules``).
    agent_rules = models.CharField(
        max_length=8,
        choices=Agent.choices,
        blank=True,
        default="",
        help_text="the rules chosen for this session (blank: detected from what the file holds)",
    )
    format_version = models.PositiveSmallIntegerField(default=3, help_text="version the file was written in")
    parent_session = models.TextField(
        blank=True, help_text="header parentSession as written: a path or an id"
    )
    created_at = models.CharField(max_length=40, blank=True, help_text="header timestamp as written")

    # A transcript in another session's artifacts folder (oh-my-pi's subagents, advisors, /tan clones:
    # treeview/session/subagents.py). It is listed under that session, not on its own.
    subagent_kind = models.CharField(
        max_length=8, choices=SubagentKind.choices, blank=True, help_text="empty: a session of its own"
    )
    agent_key = models.CharField(
        max_length=200, blank=True, help_text="the subagent's id: its file stem (Anna, Anna.Bob, __advisor)"
    )
    spawned_from_path = models.TextField(
        blank=True, help_text="the session file whose artifacts folder holds this transcript"
    )
    subagent_of = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="subagents",
        help_text="the imported session that spawned it (empty when that session is not imported)",
    )

    # Where it came from and how much of it is in the database.
    source_path = models.TextField(blank=True, db_index=True)
    source_size = models.BigIntegerField(default=0, help_text="bytes imported: complete lines only")
    source_mtime_ns = models.BigIntegerField(default=0)
    source_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the imported bytes")
    head_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the first 64 KiB imported")
    tail_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the last 64 KiB imported")
    line_count = models.PositiveIntegerField(default=0, help_text="physical lines imported")
    tail_raw = models.TextField(blank=True, help_text="text after the last imported object (its newline)")
    pending_raw = models.TextField(blank=True, help_text="a half-written last line, left for the next sync")

    # The tree as the views need it.
    # NULL: no leaf (before the first entry), as the agent's leafId can be null.
    leaf_id = models.CharField(max_length=64, blank=True, null=True)  # noqa: DJ001
    next_seq = models.BigIntegerField(default=0)
    entry_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    branch_point_count = models.PositiveIntegerField(default=0)
    first_timestamp = models.DateTimeField(null=True, blank=True)
    last_timestamp = models.DateTimeField(null=True, blank=True)
    models_used = models.JSONField(default=list, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0)

    warnings = models.JSONField(default=list, blank=True, help_text="[{line, message}] from reading the file")

    # Who may see it (treeview/access.py). No owner: a "site" session, imported from the agents' directories.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.SIGNED_IN)
    teams = models.ManyToManyField(Team, blank=True, related_name="sessions")
    imported_at = models.DateTimeField(auto_now_add=True)
    synced_at = models.DateTimeField(auto_now=True)

    objects = AgentSessionQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["cwd", "last_timestamp"]),
            models.Index(fields=["spawned_from_path"], name="session_spawned_from_path"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["source_path"], condition=~Q(source_path=""), name="session_unique_source_path"
            )
        ]

    def __str__(self) -> str:
        return self.title or self.session_id

    @property
    def rules(self) -> AgentDecision:
        """Whose rules the session is read by (oh-my-pi 18 or pi 1.6): the ones chosen for it
        (``agent_rules``), else :attr:`detected_rules`."""
        if self.agent_rules in AGENTS:
            return AgentDecision(check_agent(self.agent_rules), "chosen for this session")
        return self.detected_rules

    @cached_property
    def detected_rules(self) -> AgentDecision:
        """The agent that wrote the session, detected from its header, title slot and bookkeeping rows
        exactly as the core detects it for a file; kept per state of the session (stored rows never change,
        only more arrive), since every request of the session page asks."""
        key = (
            self.pk,
            self.imported_at,
            self.next_seq,
            self.entry_count,
            hash(self.header_raw),
            bool(self.title_slot_raw),
        )
        found = _detected.get(key) if self.pk is not None else None
        if found is None:
            from treeview import rules_cache

            stored = self.pk is not None and self.entry_count >= rules_cache.MIN_ROWS
            found = self._stored_rules() if stored else self._detect_rules()
            if self.pk is not None:
                _detected.put(key, found)
        return found

    def _stored_rules(self) -> AgentDecision:
        """The detection kept on disk (``rules_cache``) when it covers the session's rows; when rows were only
        appended since, a decision stands (the first deciding row wins) and an undecided one reads only the
        new rows; anything else (rows deleted, another header) reads every row again. Saved for the next
        process."""
        from django.db import connections, router

        from treeview import rules_cache
        from treeview.models.entries import Entry

        database = connections[router.db_for_read(Entry)].settings_dict.get("NAME")
        stamp = self.imported_at.isoformat() if self.imported_at is not None else ""
        base = rules_cache.base_key(
            database, self.pk, stamp, self.session_id, self.header_raw, bool(self.title_slot_raw)
        )
        stored = rules_cache.load(self.pk, base)
        since = 0
        if stored is not None and stored.next_seq <= self.next_seq:
            added = 0
            if stored.next_seq < self.next_seq:
                added = self.entries.filter(seq__gte=stored.next_seq, seq__lt=self.next_seq).count()
            if stored.entry_count + added == self.entry_count:  # rows only appended since
                if added == 0 or stored.decision.reason != rules_cache.UNDECIDED_REASON:
                    found = stored.decision
                    if added:
                        rules_cache.save(
                            self.pk, base, rules_cache.StoredDecision(found, self.next_seq, self.entry_count)
                        )
                    return found
                since = stored.next_seq
        found = self._detect_rules(since)
        rules_cache.save(self.pk, base, rules_cache.StoredDecision(found, self.next_seq, self.entry_count))
        return found

    def _detect_rules(self, since: int = 0) -> AgentDecision:
        """Detect from the header and the rows (only those with ``seq >= since`` when every earlier row is
        known to decide nothing)."""
        try:
            header = orjson.loads(self.header_raw)
        except orjson.JSONDecodeError:
            header = {}
        # Only rows that can decide, in file order: every non-message row and pi's old hookMessage messages.
        rows = self.entries.filter(in_file=True)
        if since:
            rows = rows.filter(seq__gte=since)
        rows = (
            rows.filter(~Q(type="message") | Q(raw__contains='"hookMessage"'))
            .order_by("seq")
            .values_list("raw", flat=True)
        )

        def entries() -> Iterator[dict[str, Any]]:
            for raw in rows.iterator():
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    yield value

        head = header if isinstance(header, dict) else {}
        return detect_agent(head, entries(), title_slot=bool(self.title_slot_raw))

    @property
    def rules_label(self) -> str:
        """The rules as the session page names them: "oh-my-pi 18 rules (title slot)"."""
        return rules_name(self.rules)

    @property
    def detected_rules_label(self) -> str:
        """The rules the file calls for, named as :attr:`rules_label` names them."""
        return rules_name(self.detected_rules)

    @property
    def display_title(self) -> str:
        """The session's name, else its first prompt (when the query asked for it), else its id."""
        if self.title:
            return self.title
        prompt = " ".join((getattr(self, "first_prompt", None) or "").removeprefix("user: ").split())
        if prompt:
            return prompt if len(prompt) <= TITLE_CHARS else prompt[: TITLE_CHARS - 1].rstrip() + "…"
        return self.session_id

    @property
    def spawned_from_name(self) -> str:
        """The file name of the session that spawned this transcript (its path is the site's business)."""
        return self.spawned_from_path.replace("\\", "/").rsplit("/", 1)[-1]

    def parent(self) -> AgentSession | None:
        """The imported session ``parentSession`` names (a file path or a session id), if there is one."""
        if not self.parent_session:
            return None
        found = (
            AgentSession.objects.filter(
                Q(source_path=self.parent_session) | Q(session_id=self.parent_session)
            )
            .exclude(pk=self.pk)
            .with_first_prompt()
            .first()
        )
        if found is not None or not self.parent_session.endswith(".jsonl"):
            return found
        # A path the parent had before oh-my-pi moved it: its header lists it in previousSessionFiles.
        spelled = orjson.dumps(self.parent_session).decode()
        for moved in (
            AgentSession.objects.filter(header_raw__contains=spelled)
            .filter(header_raw__contains='"previousSessionFiles"')
            .exclude(pk=self.pk)
            .with_first_prompt()
        ):
            if self.parent_session in moved.previous_files():
                return moved
        return None

    def previous_files(self) -> list[str]:
        """The paths oh-my-pi moved this session from (its header's ``previousSessionFiles``)."""
        try:
            header = orjson.loads(self.header_raw)
        except orjson.JSONDecodeError:
            return []
        earlier = header.get("previousSessionFiles") if isinstance(header, dict) else None
        return [p for p in earlier if isinstance(p, str) and p] if isinstance(earlier, list) else []

    def children(self) -> AgentSessionQuerySet:
        """Sessions forked from this one (their ``parentSession`` names this file or this id); the transcripts
        of its subagents name it too, but they are :attr:`subagents`."""
        names = [self.session_id] + ([self.source_path] if self.source_path else []) + self.previous_files()
        forks = AgentSession.objects.filter(parent_session__in=names, subagent_kind="").exclude(pk=self.pk)
        return forks  # type: ignore[return-value]

    def forks(self) -> AgentSessionQuerySet:
        """The sessions branched or forked from this one (:meth:`children`), oldest first."""
        return self.children().with_first_prompt().order_by("created_at", "pk")

    def resolved_labels(self) -> dict[str, str]:
        """target id → label: the last label entry per target wins; an empty one clears (§5.9)."""
        labels: dict[str, str] = {}
        rows = self.entries.filter(type="label").order_by("seq").values_list("label_target", "label_text")
        for target, text in rows:
            if not target:
                continue
            # JS Map semantics, as the agent resolves them: setting keeps a target's place, clearing drops it.
            if text:
                labels[target] = text
            else:
                labels.pop(target, None)
        return labels
