"""Input of the forms: the list's page number, the copy of a session, uploaded session files, the session
page's query (filter, search, deep links) and its label form."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django import forms
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.http import HttpRequest
from django.utils.http import urlencode

from treeview.explorer import VIEW_MODES
from treeview.models import AgentSession, ReviewStatus
from treeview.services.comments import BODY_MAX_CHARS, QUOTE_MAX_CHARS

UPLOAD_FIELD = "files"


#: The session list's orders: value → (label, whether rows are grouped under their project).
LIST_SORTS = {
    "project": ("project, latest activity first", True),
    "newest": ("latest activity first", False),
    "oldest": ("oldest activity first", False),
    "cost": ("cost, highest first", False),
    "entries": ("entries, most first", False),
    "title": ("title, A to Z", False),
}


#: The project filter's value for sessions without a working directory.
NO_PROJECT = "-"


class ListPageForm(forms.Form):
    """The session list's query: filters, order and page (GET for the list, POST for actions that re-render
    it). Every field is optional; a malformed value is dropped, not an error, so a stale link still shows a
    list."""

    page = forms.IntegerField(min_value=1, required=False)
    # Sessions with a branch in this review status (treeview/services/review.py: review_filter).
    review = forms.ChoiceField(choices=[("", "any"), *ReviewStatus.Status.choices], required=False)
    project = forms.CharField(required=False, max_length=4096)
    agent = forms.ChoiceField(choices=[("", "any"), *AgentSession.Agent.choices], required=False)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    min_cost = forms.DecimalField(
        required=False, min_value=0, max_digits=12, decimal_places=2, label="Cost at least ($)"
    )
    sort = forms.ChoiceField(choices=[(key, label) for key, (label, _) in LIST_SORTS.items()], required=False)

    def _clean(self) -> dict[str, Any]:
        if not hasattr(self, "_values"):
            self.is_valid()
            # Keep the valid fields of a partly malformed query.
            self._values = {name: self.cleaned_data.get(name) for name in self.fields}
        return self._values

    def page_number(self) -> int:
        """The page asked for; 1 when none or a malformed one was given (the paginator clamps the rest)."""
        page = self._clean()["page"]
        return int(page) if page else 1

    def review_status(self) -> str:
        """The review status the list is narrowed to; "" for every session (or a malformed value)."""
        return str(self._clean()["review"] or "")

    def filters(self) -> ListFilters:
        """The valid filters and order of the query."""
        values = self._clean()
        return ListFilters(
            review=str(values["review"] or ""),
            project=str(values["project"] or ""),
            agent=str(values["agent"] or ""),
            since=values["since"],
            until=values["until"],
            min_cost=float(values["min_cost"]) if values["min_cost"] is not None else None,
            sort=str(values["sort"] or "project"),
        )


@dataclass(frozen=True)
class ListFilters:
    """What the session list shows: ``project`` is a working directory (:data:`NO_PROJECT` for sessions
    without one, "" for any); dates are inclusive days."""

    review: str = ""
    project: str = ""
    agent: str = ""
    since: date | None = None
    until: date | None = None
    min_cost: float | None = None
    sort: str = "project"

    @property
    def grouped(self) -> bool:
        return LIST_SORTS.get(self.sort, LIST_SORTS["project"])[1]

    @property
    def active(self) -> bool:
        """Whether anything narrows the list (the order alone does not)."""
        return bool(
            self.review or self.project or self.agent or self.since or self.until or self.min_cost is not None
        )

    def pairs(self) -> list[tuple[str, str]]:
        """The query's (name, value) pairs, without the defaults."""
        pairs: list[tuple[str, str]] = []
        if self.review:
            pairs.append(("review", self.review))
        if self.project:
            pairs.append(("project", self.project))
        if self.agent:
            pairs.append(("agent", self.agent))
        if self.since:
            pairs.append(("since", self.since.isoformat()))
        if self.until:
            pairs.append(("until", self.until.isoformat()))
        if self.min_cost is not None:
            pairs.append(("min_cost", f"{self.min_cost:g}"))
        if self.sort != "project":
            pairs.append(("sort", self.sort))
        return pairs

    @property
    def sort_label(self) -> str:
        return LIST_SORTS.get(self.sort, LIST_SORTS["project"])[0]

    def query(self) -> str:
        """The query string of these filters (``&``-prefixed, to follow ``?page=N``)."""
        return "".join(f"&{urlencode({key: value})}" for key, value in self.pairs())


class CopyForm(forms.Form):
    """``?copy=<pk>``: which copy of a session id (one session can be imported from two files)."""

    copy = forms.IntegerField(min_value=1, required=False)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class UploadForm(forms.Form):
    """Renders the file input. Each file is checked on its own (see :class:`SessionUploadHandler`), so one bad
    file does not invalidate the others the way a form error would."""

    files = forms.FileField(
        label="Session files",
        widget=MultipleFileInput(attrs={"accept": ".jsonl"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without JavaScript the browser refuses an empty submission itself.
        self.fields[UPLOAD_FIELD].widget.attrs["required"] = True


@dataclass
class UploadPart:
    """One file of the multipart body, in arrival order. ``refusal`` says why it is not imported; ``skipped``:
    it was dropped while streaming, so it is not in ``request.FILES``."""

    name: str
    refusal: str | None = None
    skipped: bool = False


class SessionUploadHandler(FileUploadHandler):
    """First upload handler: drops a file that is not ``.jsonl`` or is over the size limit while the body is
    still streaming in, so that the handlers after it (memory, temporary file) never store it whole.

    :attr:`parts` lists every file of the upload field in order, each with the reason it was refused, if it
    was. Dropped files are missing from ``request.FILES``.
    """

    def __init__(self, request: HttpRequest, max_mb: int) -> None:
        super().__init__(request)
        self.max_mb = max_mb
        self.max_bytes = max_mb * 1024 * 1024
        self.parts: list[UploadPart] = []
        self._current: UploadPart | None = None
        self._received = 0

    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        self._received = 0
        self._current = None
        if field_name != UPLOAD_FIELD:
            return
        self._current = UploadPart(file_name)
        self.parts.append(self._current)
        if not file_name.lower().endswith(".jsonl"):
            # Dropped at its first chunk, not here: SkipFile raised in new_file would make Django close the
            # file the next handler still holds from the previous upload, losing that file.
            self._current.refusal = "not a .jsonl file"

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        part = self._current
        if part is None:
            return raw_data
        self._received += len(raw_data)
        if part.refusal is None and self._received > self.max_bytes:
            part.refusal = f"too big: over the {self.max_mb} MB limit per file"
        if part.refusal is not None:
            part.skipped = True
            raise SkipFile
        return raw_data

    def file_complete(self, file_size: int) -> None:
        # The next handler (in memory or temporary file) builds the UploadedFile.
        return None


# The agent's five filter modes and Arbor's "commented".
FILTER_CHOICES = [(mode, mode) for mode in VIEW_MODES]


class SessionViewForm(forms.Form):
    """The session page's query: filter mode, search, deep-link ids (pi's export names), window positions."""

    filter = forms.ChoiceField(choices=FILTER_CHOICES, required=False)
    q = forms.CharField(required=False, max_length=500, strip=False)
    leafId = forms.CharField(required=False, max_length=64)  # noqa: N815 (pi's HTML export's parameter name)
    targetId = forms.CharField(required=False, max_length=64)  # noqa: N815
    start = forms.IntegerField(required=False, min_value=0)
    end = forms.IntegerField(required=False, min_value=0)

    def clean_filter(self) -> str:
        return str(self.cleaned_data.get("filter") or "default")


class TreeRowsForm(forms.Form):
    """How many rows the rows endpoint returns (its other parameters are the session page's)."""

    count = forms.IntegerField(required=False, min_value=1, max_value=400)


class LabelForm(forms.Form):
    """Set (or, when empty, clear) the label of one entry; the view fields say where to return."""

    target_id = forms.CharField(max_length=64)
    label = forms.CharField(required=False, max_length=500)
    filter = forms.ChoiceField(choices=FILTER_CHOICES, required=False)
    q = forms.CharField(required=False, max_length=500, strip=False)
    leafId = forms.CharField(required=False, max_length=64)  # noqa: N815


# -- comments ----------------------------------------------------------------------------------------------


class CommentForm(forms.Form):
    """A new comment on an entry (``quote``: on that text range of it; empty: the whole entry), or a reply to
    the comment ``reply_to`` (which joins its thread)."""

    body = forms.CharField(max_length=BODY_MAX_CHARS, widget=forms.Textarea)
    quote = forms.CharField(required=False, max_length=QUOTE_MAX_CHARS, strip=False)
    quote_start = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    reply_to = forms.IntegerField(required=False, min_value=1)


class CommentEditForm(forms.Form):
    """The new text of one's own comment."""

    body = forms.CharField(max_length=BODY_MAX_CHARS, widget=forms.Textarea)


class CommentPlaceForm(forms.Form):
    """Where the comment forms send the reader back to (the session page's query); bad values are dropped."""

    copy = forms.IntegerField(min_value=1, required=False)
    filter = forms.ChoiceField(choices=FILTER_CHOICES, required=False)
    q = forms.CharField(required=False, max_length=500, strip=False)
    leafId = forms.CharField(required=False, max_length=64)  # noqa: N815


class RulesForm(forms.Form):
    """The session page's choice of rules: oh-my-pi 18, pi 1.6, or detected from the file."""

    rules = forms.ChoiceField(
        choices=[("detect", "detect from the file"), ("omp", "oh-my-pi 18"), ("pi", "pi 1.6")],
        label="Read by",
    )

    @classmethod
    def for_session(cls, session: AgentSession) -> RulesForm:
        return cls(initial={"rules": session.agent_rules or "detect"})
