"""Arbor against the newest agents' real answers (tests/data/reference-latest; see tests/reference_latest.py).

Each answer whose agent opens its file is compared, kind by kind, with Arbor reading the file by that agent's
rules. ``KNOWN_GAPS`` lists the (answer, kind) pairs where Arbor does not agree yet: the test checks they
still disagree, so a fix must take its pair off the list (``python -m tests.reference_latest -v`` shows
the items).
"""

from __future__ import annotations

import pytest

from tests.reference_latest import KINDS, LatestCase, all_latest_cases, compare, fixture_bytes
from treeview.session.jsonl import SessionFileError
from treeview.session.session_manager import SessionManager

CASES = all_latest_cases()
OPENED = [case for case in CASES if case.opens]

KNOWN_GAPS: set[tuple[str, str]] = set()


def test_every_answer_is_covered() -> None:
    assert len(CASES) == 38
    assert {case.answer for case in CASES} == {"omp18", "pi16"}
    assert all(len([c for c in CASES if c.stem == case.stem]) == 2 for case in CASES)


@pytest.mark.parametrize("case", [c for c in CASES if not c.stem.startswith(("omp18w_", "pi16w_"))], ids=str)
def test_input_is_the_exact_file_the_agent_read(case: LatestCase) -> None:
    # The agent-written files of latest/ are not byte-identical to the run's input (their sha256 differs,
    # with one line more); their entries are the same, which the tree comparison checks.
    import hashlib

    assert hashlib.sha256(fixture_bytes(case.stem)).hexdigest() == case.reference["input_sha256"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", OPENED, ids=str)
def test_arbor_agrees_with_the_newest_agent(case: LatestCase, kind: str) -> None:
    failures = [f"{item}: {detail}" for item, ok, detail in compare(case, kind) if not ok]
    if (str(case), kind) in KNOWN_GAPS:
        assert failures, f"{case} {kind} agrees now: take it off KNOWN_GAPS"
    else:
        assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("case", [c for c in CASES if not c.opens], ids=str)
def test_pi_refuses_what_pi_refuses_and_leaves_the_file_alone(case: LatestCase) -> None:
    assert case.agent == "pi"
    data = fixture_bytes(case.stem)
    with pytest.raises(SessionFileError, match="title slot"):
        SessionManager.from_bytes(data, agent="pi")
