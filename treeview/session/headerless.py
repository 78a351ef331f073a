"""Session files whose first JSON object is not a session header (issue 13).

A file cut down by hand, or written by a tool that embeds pi and leaves the header out, still holds a
session's entries. pi 1.6 refuses to open it ("not a valid session") and leaves it alone; oh-my-pi 18 does
the same. Arbor reads it anyway, with a header it makes up (and says so): the id from the file name when the
name holds a UUID (``<timestamp>_<uuid>.jsonl``), else one derived from the file's path, so every read gives
the same id; the time of the first entry; the working directory unknown. Nothing of it is written back: the
agents would not open the file, so appending to it cannot make it theirs again (treeview/services/append.py).

A file of the pi SDK's version 4 session store is something else: pi 1.6's coding agent knows session
versions 1 to 3 only (``CURRENT_SESSION_VERSION`` 3: older ones are migrated, nothing newer is understood),
and version 4 is the lane-based session store of the pi SDK (pi-agent-core's ``SessionRepo``, records of
operations and lanes rather than a tree of entries). Such a file is refused with a message that says so.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

__all__ = [
    "SDK_V4_MESSAGE",
    "headerless_session_id",
    "headerless_warning",
    "is_sdk_v4",
    "sdk_v4_message",
    "synthesized_header",
]

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: The namespace of the ids derived from a path (uuid5: the same path always gives the same id).
_PATH_NAMESPACE = uuid.UUID("6d3c1f0e-5a2b-4c7d-9e8f-a1b2c3d4e5f6")

SDK_V4_MESSAGE = (
    "not a session file of the pi coding agent: its first object is version {version} of the pi SDK's "
    "session store (lane-based records, not a tree of entries); pi 1.6 reads session versions 1 to 3 only, "
    "and so does Arbor"
)


def headerless_session_id(path: str | os.PathLike[str]) -> str:
    """The id of a header-less session file: the (last) UUID in its name, else a UUID derived from its
    absolute path."""
    found = _UUID.findall(Path(path).name)
    if found:
        return str(found[-1])
    return str(uuid.uuid5(_PATH_NAMESPACE, os.path.abspath(os.fspath(path))))


def synthesized_header(session_id: str, first: dict[str, Any]) -> dict[str, Any]:
    """The header Arbor reads a header-less file with: version 3, the time of its first entry, no cwd."""
    timestamp = first.get("timestamp")
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": timestamp if isinstance(timestamp, str) else "",
        "cwd": "",
    }


def headerless_warning(session_id: str, first: dict[str, Any]) -> str:
    kind = first.get("type")
    what = f"a {kind!r} entry" if isinstance(kind, str) and kind else "an object without a type"
    return (
        f"no session header: the file starts with {what}, so the agents do not open it. Read with a header "
        f"made up by Arbor (id {session_id}, working directory unknown); Arbor never writes to this file"
    )


def is_sdk_v4(value: dict[str, Any]) -> bool:
    """Is this first object a record of the pi SDK's version 4 session store (a ``version`` of 4 or more,
    which no coding-agent session file has)?"""
    version = value.get("version")
    return isinstance(version, int | float) and not isinstance(version, bool) and version >= 4


def sdk_v4_message(value: dict[str, Any]) -> str:
    version = value.get("version")
    shown = int(version) if isinstance(version, float) and version.is_integer() else version
    return SDK_V4_MESSAGE.format(version=shown)
