"""``/branch`` from the browser (spec §14): the new session file, where it goes, its import, the hooks, the
views (picker, fork form) and the links between the two sessions."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings

from tests.reference import DATA, import_fixture
from tests.test_navigation import CASES
from treeview import explorer
from treeview.extensions import ExtensionRegistry, current_context, hook_runner
from treeview.models import AgentSession, ImportIssue
from treeview.services.append import set_label
from treeview.services.export import load_manager
from treeview.services.fork import (
    ForkFailed,
    InvalidBranchEntry,
    UnknownEntry,
    fork_dir,
    fork_session,
    user_messages,
)
from treeview.services.sync import SyncResult, sync_file
from treeview.session.hooks import SESSION_BEFORE_BRANCH, SESSION_BRANCH
from treeview.session.jsonl import dumps
from treeview.session.migrations import stable_id_maker
from treeview.session.navigation import branch_from_user_message, user_messages_for_branching
from treeview.session.session_manager import SessionManager

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
BRANCHING = "v3_branching_labels.jsonl"
ORPHANS = "v3_orphans_sorting_malformed.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
BRANCH_TEXT = re.compile(r'<span class="branch-text" id="[^"]*">([^<]*)</span>')
CHOICE = re.compile(r'<li class="branch-choice" data-entry-id="([^"]*)"')

# What the test extensions below saw (they run in the server's worker threads: plain lists are enough).
SEEN: list[tuple[str, Any, Any]] = []


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path: Path) -> None:
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_SESSION_DIRS = [tmp_path / "agent"]
    settings.ARBOR_WRITE_BACK = False
    settings.ARBOR_EXTENSIONS = []
    SEEN.clear()
    explorer.clear_caches()


def copy_into(folder: Path, name: str, source_folder: str = "handmade") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copyfile(DATA / source_folder / name, path)
    return path


def header_of(text: str) -> dict[str, Any]:
    """The header of a written session: its first line, or its second after oh-my-pi's title slot."""
    first, *rest = text.splitlines()
    value: dict[str, Any] = json.loads(first)
    return json.loads(rest[0]) if value.get("type") == "title" else value


def entry_lines(text: str) -> list[str]:
    """The entry lines of a written session (after the title slot, if any, and the header)."""
    lines = text.splitlines()
    return lines[2:] if json.loads(lines[0]).get("type") == "title" else lines[1:]


def imported(path: Path) -> AgentSession:
    result = sync_file(path)
    assert result.session is not None, result.error
    return result.session


def masked(text: str) -> list[str]:
    """The lines with what every /branch makes fresh masked: the header's id and timestamp, and the ids and
    timestamps of the label entries it re-creates (their chain of parentIds too), and the time of the title
    slot oh-my-pi 18 starts the file with."""
    header, *lines = text.splitlines()
    result = []
    if json.loads(header).get("type") == "title":
        slot = json.loads(header)
        slot.update(updatedAt="<ts>")
        result.append(dumps(slot))
        header, *lines = lines
    head = json.loads(header)
    head.update(id="<id>", timestamp="<ts>")
    result.append(dumps(head))
    fresh: dict[str, str] = {}
    for line in lines:
        entry = json.loads(line)
        if entry.get("type") == "label":
            fresh[entry["id"]] = f"<label {len(fresh)}>"
            entry.update(
                id=fresh[entry["id"]],
                timestamp="<ts>",
                parentId=fresh.get(entry["parentId"], entry["parentId"]),
            )
            line = dumps(entry)
        result.append(line)
    return result


def core_branch(source: Path, entry_id: str, out: Path) -> SessionManager:
    """The core's own ``/branch`` on the file (v1 files get the ids the database gives them)."""
    data = source.read_bytes()
    probe = SessionManager.from_bytes(data)
    manager = SessionManager.from_bytes(
        data, path=str(source.resolve()), make_id=stable_id_maker(probe.session_id), persist=True
    )
    manager.session_dir = str(out)
    asyncio.run(branch_from_user_message(manager, entry_id))
    return manager


def branch_points(manager: SessionManager) -> list[str]:
    """A few user messages to branch at: first, middle, last, and a root one if there is one."""
    ids = [choice.entry_id for choice in user_messages_for_branching(manager)]
    roots = [i for i in ids if not manager.by_id[i].get("parentId")]
    parents = [i for i in ids if manager.get_branch(manager.by_id[i].get("parentId") or "")]
    picked = [*parents[:1], *parents[len(parents) // 2 : len(parents) // 2 + 1], *parents[-1:], *roots[:1]]
    return list(dict.fromkeys(picked))


# -- the file ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fork_writes_exactly_what_the_cores_branch_writes(case: Any, tmp_path: Path) -> None:
    source = copy_into(tmp_path / "in", case.path.name, case.path.parent.name)
    before = source.read_bytes()
    session = imported(source)
    points = branch_points(load_manager(session))
    assert points, f"{case} has no user message to branch at"
    texts = {choice.entry_id: choice.text for choice in user_messages_for_branching(core_probe(source))}
    for number, entry_id in enumerate(points):
        result = fork_session(session, entry_id)
        assert result.new_session is not None and not result.cancelled
        ours = Path(result.new_session.source_path).read_text(encoding="utf-8")
        core = core_branch(source, entry_id, tmp_path / f"core-{number}")
        assert masked(ours) == masked(core.serialize()), entry_id
        if core.entries:
            # The core wrote its file at once (§10.10); ours is the same bytes but the fresh parts.
            written = Path(str(core.session_file)).read_text(encoding="utf-8")
            assert masked(written) == masked(ours)
        assert header_of(ours)["parentSession"] == str(source)
        assert result.editor_text == texts[entry_id]
    assert source.read_bytes() == before


def core_probe(source: Path) -> SessionManager:
    data = source.read_bytes()
    return SessionManager.from_bytes(
        data, make_id=stable_id_maker(SessionManager.from_bytes(data).session_id)
    )


@pytest.mark.parametrize("case", [c for c in CASES if "entryId" in c.reference.get("branched", {})], ids=str)
def test_fork_next_to_the_agents_file_is_the_file_the_original_wrote(
    case: Any, tmp_path: Path, settings: Any
) -> None:
    # The newest agent's /branch file (oh-my-pi 18: a title slot first; pi 1.6: re-linked past labels).
    from tests.reference_latest import Ids, LatestCase, _normalized_branch, agent_view

    settings.ARBOR_WRITE_BACK = True
    settings.ARBOR_SESSION_DIRS = [tmp_path / "agent"]
    source = copy_into(tmp_path / "agent" / "-proj", case.path.name, case.path.parent.name)
    before = source.read_bytes()
    session = imported(source)
    manager = load_manager(session)
    answer = LatestCase(case.path.stem, {"omp": "omp18", "pi": "pi16"}[manager.agent]).reference
    ref = answer["branched"]
    ids = Ids(manager, answer)

    result = fork_session(session, ids(ref["entryId"]))

    assert result.new_session is not None and result.editor_text == ref["selectedText"]
    written = Path(result.new_session.source_path)
    assert source.read_bytes() == before
    text = written.read_text(encoding="utf-8")
    assert list(header_of(text)) == ref["header_keys"]
    if any(manager.entry_line(i) is None for i in range(len(manager.entries))) or len(
        agent_view(manager)
    ) != len(manager.entries):
        return  # glued lines: Arbor recovers entries the agent never saw (compared in test_navigation)
    positions = {manager.entries[i]["id"]: n for n, i in enumerate(agent_view(manager))}
    ours = _normalized_branch(text, positions)
    if manager.agent == "omp":
        ours = ours.replace(
            f'"cwd":{json.dumps(manager.cwd)}', f'"cwd":{json.dumps(header_of(ref["text"])["cwd"])}'
        )
    assert ours.replace(json.dumps(str(source)), '"<parent-session-file>"') == ref["normalized_text"]


def test_labels_on_the_path_are_re_created_and_the_others_are_not(tmp_path: Path) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    # A label Arbor added (write-back off: only in the database) on the path, and one off the path.
    set_label(session, "b2000001", "first question")
    set_label(session, "b2000004", "off the path")
    labels = session.resolved_labels()

    result = fork_session(session, "b2000007")

    assert result.new_session is not None
    text = Path(result.new_session.source_path).read_text(encoding="utf-8")
    lines = [json.loads(line) for line in entry_lines(text)]
    path_ids = [entry["id"] for entry in lines if entry["type"] != "label"]
    assert path_ids == ["a1000001", "a1000002", "b2000001", "b2000002", "d4000001"]
    carried = {target: label for target, label in labels.items() if target in path_ids}
    assert "b2000001" in carried and "b2000004" not in carried
    fresh = [entry for entry in lines if entry["type"] == "label"]
    assert [(entry["targetId"], entry["label"]) for entry in fresh] == list(carried.items())
    assert fresh[0]["parentId"] == "d4000001"
    assert all(later["parentId"] == earlier["id"] for earlier, later in zip(fresh, fresh[1:], strict=False))
    assert result.new_session.resolved_labels() == carried
    assert result.new_session.leaf_id == fresh[-1]["id"]


def test_a_root_message_starts_an_empty_session_naming_its_parent(tmp_path: Path) -> None:
    session = import_fixture(tmp_path, ORPHANS)

    result = fork_session(session, "r0000001")

    assert result.editor_text == "root question" and result.new_session is not None
    new = result.new_session
    text = Path(new.source_path).read_text(encoding="utf-8")
    (header_line,) = text.splitlines()
    header = json.loads(header_line)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["parentSession"] == session.source_path and header["id"] == new.session_id
    assert new.entry_count == 0 and new.leaf_id is None
    assert new.parent() == session and list(session.forks()) == [new]


def test_an_orphan_message_cannot_be_branched(tmp_path: Path) -> None:
    session = import_fixture(tmp_path, ORPHANS)
    with pytest.raises(ForkFailed, match="Entry zzzzzzzz not found"):
        fork_session(session, "o0000001")
    assert AgentSession.objects.count() == 1


@pytest.mark.parametrize("entry_id", ["b2000002", "c3000001", "d4000001"])
def test_anything_but_a_user_message_is_refused(tmp_path: Path, entry_id: str) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    with pytest.raises(InvalidBranchEntry, match="^Invalid entry ID for branching$"):
        fork_session(session, entry_id)
    assert AgentSession.objects.count() == 1


@pytest.mark.parametrize("entry_id", ["missing", ""])
def test_an_unknown_entry_is_refused(tmp_path: Path, entry_id: str) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    with pytest.raises(UnknownEntry):
        fork_session(session, entry_id)


# -- where the file goes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("write_back", "in_agent_dir", "next_to_it"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_the_new_file_goes_next_to_the_agents_file_only_with_write_back(
    tmp_path: Path, settings: Any, write_back: bool, in_agent_dir: bool, next_to_it: bool
) -> None:
    settings.ARBOR_WRITE_BACK = write_back
    folder = tmp_path / "agent" / "-proj" if in_agent_dir else tmp_path / "elsewhere"
    session = imported(copy_into(folder, BRANCHING))
    expected = folder if next_to_it else tmp_path / "data" / "forks"
    assert fork_dir(session) == expected.resolve() or fork_dir(session) == expected

    result = fork_session(session, "b2000003")

    assert result.new_session is not None
    written = Path(result.new_session.source_path)
    assert written.parent.resolve() == expected.resolve()
    header = header_of(written.read_text())
    assert written.name == f"{header['timestamp'].replace(':', '-').replace('.', '-')}_{header['id']}.jsonl"


# -- hooks ---------------------------------------------------------------------------------------------------


def register_cancel(runner: ExtensionRegistry) -> None:
    def cancel(event: Any) -> dict[str, bool]:
        SEEN.append(("before", event.entry_id, current_context()))
        return {"cancel": True}

    runner.on(SESSION_BEFORE_BRANCH, cancel)


def register_failing_then_watching(runner: ExtensionRegistry) -> None:
    def fail(event: Any) -> None:
        raise RuntimeError("broken extension")

    async def watch_before(event: Any) -> None:
        context = current_context()
        SEEN.append(("before", event.entry_id, context and dict(context.labels)))

    def watch_after(event: Any) -> None:
        context = current_context()
        assert context is not None
        SEEN.append(("after", event.previous_session_file, context.new_session))

    runner.on(SESSION_BEFORE_BRANCH, fail)
    runner.on(SESSION_BEFORE_BRANCH, watch_before)
    runner.on(SESSION_BRANCH, watch_after)


def test_a_cancelling_extension_leaves_everything_as_it_was(tmp_path: Path) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    with override_settings(ARBOR_EXTENSIONS=["tests.test_fork.register_cancel"]):
        result = fork_session(session, "b2000007")

    assert result.cancelled and result.new_session is None
    assert result.editor_text == "Add subcommands using click instead."
    assert [(kind, entry) for kind, entry, _ in SEEN] == [("before", "b2000007")]
    assert SEEN[0][2] is not None and SEEN[0][2].session == session
    assert AgentSession.objects.count() == 1
    assert not (tmp_path / "data" / "forks").exists() or not list((tmp_path / "data" / "forks").iterdir())
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".jsonl") == [BRANCHING]


def test_a_failing_extension_is_logged_and_the_branch_goes_on(tmp_path: Path, caplog: Any) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    set_label(session, "b2000001", "start")
    with override_settings(ARBOR_EXTENSIONS=["tests.test_fork.register_failing_then_watching"]):
        result = fork_session(session, "b2000007")
        errors = list(hook_runner().errors)

    assert result.new_session is not None and not result.cancelled
    assert [(e.extension, e.event, e.error) for e in errors] == [
        ("tests.test_fork.register_failing_then_watching", SESSION_BEFORE_BRANCH, "broken extension")
    ]
    assert "broken extension" in caplog.text
    # The handlers after the failing one ran; session_branch came once the new session was imported.
    expected = [
        ("before", "b2000007", session.resolved_labels()),
        ("after", session.source_path, result.new_session),
    ]
    assert expected == SEEN


# -- views ---------------------------------------------------------------------------------------------------


def fork_url(session_id: str = SID) -> str:
    return f"/s/{session_id}/fork/"


def picker_url(session_id: str = SID) -> str:
    return f"/s/{session_id}/branch-picker/"


def new_session() -> AgentSession:
    return AgentSession.objects.exclude(session_id=SID).get()


def test_fork_without_javascript_redirects_to_the_new_session_to_continue(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)

    response = client.post(fork_url(), {"entry_id": "b2000003"})

    assert response.status_code == 303
    new = new_session()
    assert response["Location"] == f"/s/{new.session_id}/?continueFrom=b2000003"
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert page.context["continue_text"] == "Add subcommands."
    assert page.context["parent"].session_id == SID


def test_fork_with_htmx_redirects_the_browser(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)

    response = client.post(fork_url(), {"entry_id": "b2000007"}, headers=HTMX)

    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/s/{new_session().session_id}/?continueFrom=b2000007"
    assert "HX-Request" in response["Vary"]


def test_fork_needs_the_csrf_token(tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)
    client = Client(enforce_csrf_checks=True)

    refused = client.post(fork_url(), {"entry_id": "b2000003"})
    assert refused.status_code == 403 and AgentSession.objects.count() == 1

    picker = client.get(picker_url()).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', picker)
    assert token is not None
    accepted = client.post(fork_url(), {"entry_id": "b2000003", "csrfmiddlewaretoken": token.group(1)})
    assert accepted.status_code == 303 and AgentSession.objects.count() == 2


def test_fork_only_answers_post(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)
    assert client.get(fork_url()).status_code == 405


@pytest.mark.parametrize(
    ("data", "status"),
    [({"entry_id": "missing"}, 404), ({}, 400), ({"entry_id": "b2000003", "page": "x"}, 400)],
)
def test_fork_of_an_unknown_entry_or_a_malformed_form_is_refused(
    client: Client, tmp_path: Path, data, status
):
    import_fixture(tmp_path, BRANCHING)
    assert client.post(fork_url(), data).status_code == status
    assert AgentSession.objects.count() == 1


def test_fork_of_an_unknown_session_is_a_404(client: Client):
    assert client.post(fork_url("nope"), {"entry_id": "b2000003"}).status_code == 404


def test_fork_at_an_assistant_message_says_why_not(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)

    response = client.post(fork_url(), {"entry_id": "b2000002"})

    assert response.status_code == 400
    text = response.content.decode()
    assert "Invalid entry ID for branching" in text and "b2000002 is not a user message" in text
    assert AgentSession.objects.count() == 1


@pytest.mark.parametrize("htmx", [False, True])
def test_a_cancelled_fork_shows_the_picker_again_with_a_notice(client: Client, tmp_path: Path, htmx: bool):
    import_fixture(tmp_path, BRANCHING)
    with override_settings(ARBOR_EXTENSIONS=["tests.test_fork.register_cancel"]):
        response = client.post(fork_url(), {"entry_id": "b2000003"}, headers=HTMX if htmx else {})

    assert response.status_code == 409
    html = response.content.decode()
    assert "An extension cancelled the branch; nothing was written." in html
    assert html.lstrip().startswith('<div id="branch-choices"') is htmx
    assert AgentSession.objects.count() == 1


def test_the_picker_lists_every_user_message_in_file_order_the_last_selected(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)

    response = client.get(picker_url(), headers=HTMX)

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="branch-choices"')
    assert CHOICE.findall(html) == ["b2000001", "b2000003", "b2000007"]
    expected = [(c.entry_id, c.text) for c in user_messages_for_branching(load_manager(session))]
    assert [(c.entry_id, c.preview) for c in user_messages(session)] == expected
    assert [unescape(t) for t in BRANCH_TEXT.findall(html)] == [text for _, text in expected]
    # Only the last one is pre-selected.
    assert html.count("autofocus") == 1
    assert html.index("autofocus") > html.index('data-entry-id="b2000007"')
    assert f'action="{fork_url()}"' in html


def test_the_picker_without_javascript_is_a_page_with_the_list_in_place(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)

    response = client.get(picker_url())

    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html
    assert re.search(r'<dialog id="branch-picker"[^>]*\sopen>', html)
    assert CHOICE.findall(html) == ["b2000001", "b2000003", "b2000007"]
    assert 'src="/static/branch.js"' in html


def test_the_picker_of_a_copy_posts_to_that_copy(client: Client, tmp_path: Path):
    first = import_fixture(tmp_path, BRANCHING)
    second = imported(copy_into(tmp_path / "other", BRANCHING))
    html = client.get(picker_url() + f"?copy={first.pk}", headers=HTMX).content.decode()
    assert f'action="{fork_url()}?copy={first.pk}"' in html

    response = client.post(fork_url() + f"?copy={first.pk}", {"entry_id": "b2000003"})

    assert response.status_code == 303
    fork = AgentSession.objects.exclude(session_id=SID).get()
    assert fork.parent_session == first.source_path != second.source_path


def test_a_session_without_user_messages_has_nothing_to_branch_from(client: Client, tmp_path: Path):
    path = tmp_path / "quiet.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "quiet",
        "timestamp": "2026-05-01T10:00:00.000Z",
        "cwd": "/",
    }
    entry = {"type": "model_change", "id": "m1", "parentId": None, "timestamp": "2026-05-01T10:00:01.000Z"}
    path.write_text(dumps(header) + "\n" + dumps({**entry, "model": "a/b"}) + "\n")
    imported(path)

    html = client.get(picker_url("quiet"), headers=HTMX).content.decode()

    assert "there is nothing to branch from" in html and "branch-here" not in html


def write_many_questions(path: Path, count: int) -> None:
    manager = SessionManager.create("/home/dev/many")
    for number in range(count):
        manager.append_message({"role": "user", "content": f"question {number + 1}", "timestamp": number})
        manager.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": number}
        )
    manager.write_to(path)


def test_a_long_picker_comes_in_pages_the_last_one_first(client: Client, tmp_path: Path):
    path = tmp_path / "many.jsonl"
    write_many_questions(path, 450)
    session = imported(path)
    url = picker_url(session.session_id)

    last = client.get(url, headers=HTMX).content.decode()

    assert [unescape(t) for t in BRANCH_TEXT.findall(last)] == [f"question {n}" for n in range(401, 451)]
    assert "User messages 401–450 of 450" in last
    assert f'hx-get="{url}?page=2"' in last and "later messages" not in last
    middle = client.get(url + "?page=2", headers=HTMX).content.decode()
    assert [unescape(t) for t in BRANCH_TEXT.findall(middle)] == [f"question {n}" for n in range(201, 401)]
    assert f'hx-get="{url}?page=1"' in middle and f'hx-get="{url}?page=3"' in middle
    assert 'name="page" value="2"' in middle
    first = client.get(url + "?page=1", headers=HTMX).content.decode()
    assert BRANCH_TEXT.findall(first)[0] == "question 1" and "earlier messages" not in first
    # Out of range: the nearest page; malformed: refused.
    assert "question 450" in client.get(url + "?page=99", headers=HTMX).content.decode()
    assert client.get(url + "?page=zero").status_code == 400


def test_a_long_message_is_shown_cut_and_continued_whole(client: Client, tmp_path: Path):
    path = tmp_path / "long.jsonl"
    long_text = "word " * 400 + "\n\nthe end"
    manager = SessionManager.create("/home/dev/long")
    manager.append_message({"role": "user", "content": "first", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2})
    entry_id = manager.append_message({"role": "user", "content": [{"type": "text", "text": long_text}]})
    manager.write_to(path)
    session = imported(path)

    (preview,) = [c.preview for c in user_messages(session) if c.entry_id == entry_id]
    assert len(preview) == 300 and preview.endswith("…") and "\n" not in preview

    response = client.post(fork_url(session.session_id), {"entry_id": entry_id})
    page = client.get(response["Location"])
    assert page.context["continue_text"] == long_text


# -- both sessions link to each other ------------------------------------------------------------------------


def test_the_original_lists_its_forks_and_the_fork_names_its_parent(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    first = fork_session(session, "b2000003").new_session
    second = fork_session(session, "b2000001").new_session
    assert first is not None and second is not None

    original = client.get(f"/s/{SID}/")
    assert [(link.title, link.url) for link in original.context["forks"]] == [
        # An unnamed fork is told from its original by its title, the empty one (forked at the root) too.
        ("Fork of Write a CLI argument parser in Python.", f"/s/{first.session_id}/"),
        ("Fork of Write a CLI argument parser in Python.", f"/s/{second.session_id}/"),
    ]
    assert original.context["branch_picker_url"] == picker_url()
    assert original.context["continue_text"] == ""

    fork_page = client.get(f"/s/{first.session_id}/")
    assert fork_page.context["parent"] == session and fork_page.context["forks"] == []
    assert list(first.forks()) == [] and first.parent() == session
    assert list(session.forks()) == [first, second]


def test_continue_from_only_takes_user_messages_of_the_parent(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    new = fork_session(session, "b2000003").new_session
    assert new is not None
    base = f"/s/{new.session_id}/?continueFrom="
    assert client.get(base + "b2000003").context["continue_text"] == "Add subcommands."
    assert client.get(base + "b2000002").context["continue_text"] == ""  # an assistant message
    assert client.get(base + "missing").context["continue_text"] == ""
    # The original has no parent to continue from.
    assert client.get(f"/s/{SID}/?continueFrom=b2000003").context["continue_text"] == ""


def test_htmx_requests_of_the_session_page_skip_the_fork_keys(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)
    response = client.get(f"/s/{SID}/?targetId=b2000003", headers={**HTMX, "HX-Target": "tree"})
    assert response.status_code == 200
    assert "forks" not in (response.context or {})


def test_the_empty_fork_of_a_root_message_has_a_page(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, ORPHANS)

    response = client.post(fork_url(session.session_id), {"entry_id": "r0000001"})

    page = client.get(response["Location"])
    assert page.status_code == 200
    assert page.context["continue_text"] == "root question"
    assert page.context["parent"] == session


# -- failures leave nothing behind ---------------------------------------------------------------------------


def test_a_fork_that_cannot_be_written_is_refused(tmp_path: Path, settings: Any) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    settings.ARBOR_DATA_DIR = blocker  # forks/ cannot be made under a file

    with pytest.raises(ForkFailed, match="cannot write the new session"):
        fork_session(session, "b2000003")
    assert AgentSession.objects.count() == 1


def test_a_fork_that_cannot_be_imported_is_removed(tmp_path: Path, monkeypatch: Any) -> None:
    session = import_fixture(tmp_path, BRANCHING)
    written: list[Path] = []

    def failing_sync(path: Path) -> SyncResult:
        written.append(Path(path))
        ImportIssue.objects.create(source_path=str(path), error="boom")
        return SyncResult(str(path), "failed", error="boom")

    monkeypatch.setattr("treeview.services.fork.sync_file", failing_sync)
    with pytest.raises(ForkFailed, match="could not be imported: boom"):
        fork_session(session, "b2000003")
    (path,) = written
    assert not path.exists() and not ImportIssue.objects.exists()
    assert AgentSession.objects.count() == 1


def test_a_fork_a_watcher_imported_first_is_used(tmp_path: Path, monkeypatch: Any) -> None:
    session = import_fixture(tmp_path, BRANCHING)

    def racing_sync(path: Path) -> SyncResult:
        sync_file(path)  # the watcher got there first; this import then fails on the unique path
        ImportIssue.objects.create(source_path=str(path), error="duplicate")
        return SyncResult(str(path), "failed", error="duplicate")

    monkeypatch.setattr("treeview.services.fork.sync_file", racing_sync)
    result = fork_session(session, "b2000003")

    assert result.new_session is not None and Path(result.new_session.source_path).exists()
    assert result.new_session.parent() == session and not ImportIssue.objects.exists()
