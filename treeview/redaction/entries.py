"""Walking and copying entries: the strings a scan looks at, and copies without opaque payloads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

# Keys dropped from every copy: encrypted reasoning and provider replay state (spec §6, §5.5, §9.4).
OPAQUE_KEYS = frozenset(
    {
        "thinkingSignature",
        "thoughtSignature",
        "textSignature",
        "providerPayload",
        "encrypted_content",
        "encryptedContent",
        "openaiRemoteCompaction",
    }
)
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking", "redactedThinking", "reasoning"})
_REDACTED_THINKING_TYPES = frozenset({"redactedThinking", "redacted_thinking"})

# String values under these keys are structure, not content (except inside free-form tool-call arguments): ids
# and fixed vocabularies, and the provider's model names. Names a tool or an extension chose (toolName,
# customType ...) are content: a share shows them, so they are scanned.
STRUCTURAL_KEYS = frozenset(
    {
        "api",
        "provider",
        "model",
        "modelId",
        "id",
        "parentId",
        "timestamp",
        "type",
        "role",
        "toolCallId",
        "stopReason",
        "thinkingLevel",
        "serviceTier",
        "mimeType",
        "targetId",
        "fromId",
        "firstKeptEntryId",
        "responseId",
        "itemId",
        "mode",
        "hash",
        "pad",
    }
)

# Keys of the session format itself: not scanned as strings outside free-form arguments (a team string that
# happens to be one of them must not rename the format's fields). Every other key is scanned: tool arguments,
# ``details`` and extension data can use a secret as a key.
SCHEMA_KEYS = STRUCTURAL_KEYS | frozenset(
    {
        "message",
        "content",
        "text",
        "thinking",
        "name",
        "arguments",
        "toolName",
        "details",
        "usage",
        "input",
        "output",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "cost",
        "total",
        "summary",
        "label",
        "data",
        "isError",
        "errorMessage",
        "customType",
        "display",
        "version",
        "cwd",
        "parentSession",
        "tokensBefore",
        "signature",
        "redacted",
        "command",
        "exitCode",
        "cancelled",
        "truncated",
        "fullOutputPath",
        "excludeFromContext",
        "fromHook",
        "title",
    }
)


# -- walking and copying entries -----------------------------------------------------------------------------


def _materialize(link: Any) -> tuple[str | int, ...]:
    """A path from its (key, parent) links, built only for yielded strings: deep nesting stays linear."""
    out = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    return tuple(reversed(out))


def _is_image(obj: Mapping[Any, Any]) -> bool:
    mime = obj.get("mimeType")
    return obj.get("type") in ("image", "image_url") or (isinstance(mime, str) and mime.startswith("image/"))


def _strings(entry: Mapping[str, Any]) -> Iterator[tuple[tuple[str | int, ...], str, bool]]:
    """Every scannable string of an entry with its path and whether it is a key (then the path leads to the
    value under it), in document order (iterative: no depth limit). Keys are strings a share shows too."""
    stack: list[tuple[Any, Any, bool | None]] = [(entry, None, False)]
    seen: set[int] = set()
    while stack:
        obj, link, free = stack.pop()
        if free is None:  # a key
            yield _materialize(link), obj, True
        elif isinstance(obj, str):
            yield _materialize(link), obj, False
        elif isinstance(obj, Mapping):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            image = _is_image(obj)
            kind = obj.get("type")
            children: list[tuple[Any, Any, bool | None]] = []
            for key, value in obj.items():
                if key in OPAQUE_KEYS:
                    continue
                if isinstance(key, str) and (free or key not in SCHEMA_KEYS):
                    children.append((key, (key, link), None))
                if not free and key in STRUCTURAL_KEYS:
                    continue
                if key == "data" and (image or kind in _REDACTED_THINKING_TYPES):
                    continue
                if key == "signature" and kind in _THINKING_TYPES:
                    continue
                children.append((value, (key, link), free or key == "arguments"))
            stack.extend(reversed(children))
        elif isinstance(obj, list | tuple):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            stack.extend((obj[i], (i, link), free) for i in range(len(obj) - 1, -1, -1))


def _resolve(root: Any, path: tuple[str | int, ...]) -> tuple[Any, Any]:
    node = root
    for key in path[:-1]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None, None
    if not path:
        return None, None
    key = path[-1]
    try:
        node[key]
    except (KeyError, IndexError, TypeError):
        return None, None
    return node, key


def _shell(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {}
    if isinstance(value, list | tuple):
        return []
    return value


def drop_opaque(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy without encrypted reasoning and provider replay payloads.

    Drops ``thinkingSignature``, ``thoughtSignature``, ``textSignature``, ``providerPayload``,
    ``encrypted_content`` and ``preserveData.openaiRemoteCompaction`` wherever they are, a thinking block's
    raw ``signature``, and empties the ``data`` of redacted-thinking blocks (the block stays, so content
    indexes and the entry's shape are unchanged). Everything else, including id/parentId/type, is copied.
    """
    root: Any = _shell(entry)
    if root is entry:  # not a container (hostile input): nothing to copy
        return cast(dict[str, Any], root)
    memo: dict[int, Any] = {id(entry): root}
    stack: list[tuple[Any, Any]] = [(entry, root)]
    while stack:
        src, dst = stack.pop()
        if isinstance(src, Mapping):
            kind = src.get("type")
            for key, value in src.items():
                if key in OPAQUE_KEYS or (key == "signature" and kind in _THINKING_TYPES):
                    continue
                if key == "data" and kind in _REDACTED_THINKING_TYPES:
                    dst[key] = ""
                    continue
                dst[key] = _copy_child(value, memo, stack)
        else:
            for value in src:
                dst.append(_copy_child(value, memo, stack))
    return root  # type: ignore[no-any-return]


def _copy_child(value: Any, memo: dict[int, Any], stack: list[tuple[Any, Any]]) -> Any:
    child = _shell(value)
    if child is value:
        return value
    if id(value) in memo:
        return memo[id(value)]
    memo[id(value)] = child
    stack.append((value, child))
    return child
