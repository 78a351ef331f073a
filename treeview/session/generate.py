"""Synthetic oh-my-pi (v15-style) session files for tests and benchmarks.

:func:`generate_session` yields the JSONL lines of a realistic, fully deterministic session: a version-3
header followed by user / assistant / toolResult turns with heavy-tailed tool output, thinking blocks, tool
calls, usage with float costs, model and thinking-level changes, rewinds and excursions (so the tree
branches), branch summaries, compactions, labels (set and cleared) and custom entries. Every entry is
serialized with :func:`treeview.session.jsonl.dumps`, with keys in the order the v15 writer uses (spec
§4–§6), so the files look byte-for-byte like something omp could have written.

Only ``random.Random(seed)`` is used as a source of randomness and no set is ever iterated, so the same
``(entries, seed)`` always gives the same bytes, on any machine and under any ``PYTHONHASHSEED``.

Sizes are tuned so that a 100,000-entry session is about 250 MB with a current path tens of thousands of
entries deep, which is what a long-lived omp session that has been compacted many times looks like.
"""

from __future__ import annotations

import base64
import bisect
import math
import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from treeview.session.jsonl import dumps

__all__ = ["generate_session", "write_session"]

# -------------------------------------------------------------------------------------------------------
# Vocabulary. Fixed word lists; everything random is drawn from the seeded generator.

_PROJECTS = ["arbor", "pi-mono", "oh-my-pi", "ledger", "atlas-web", "kite", "quarry", "tessellate"]
_USERS = ["dev", "mario", "sam", "alex", "kim"]
_DIRS = [
    "src",
    "src/session",
    "src/tools",
    "src/modes",
    "src/ui",
    "lib",
    "packages/core/src",
    "test",
    "scripts",
]
_STEMS = [
    "session-manager",
    "tree-selector",
    "compaction",
    "messages",
    "agent-loop",
    "theme",
    "renderer",
    "index",
    "config",
    "utils",
    "parser",
    "storage",
    "keybindings",
    "editor",
    "prompt",
    "model-registry",
    "auth",
    "settings",
    "bash",
    "read",
    "write",
    "edit",
    "diff",
    "search",
    "history",
    "export",
    "cli",
    "types",
]
_EXTS = [".ts", ".ts", ".ts", ".tsx", ".py", ".md", ".json", ".css"]
_IDENTS = [
    "entry",
    "entries",
    "leafId",
    "parentId",
    "byId",
    "node",
    "children",
    "session",
    "message",
    "content",
    "result",
    "options",
    "path",
    "branch",
    "summary",
    "tokens",
    "usage",
    "model",
    "provider",
    "label",
    "value",
    "index",
    "items",
    "config",
    "state",
    "output",
    "text",
    "buffer",
    "line",
    "offset",
    "limit",
    "cursor",
    "theme",
    "width",
    "render",
    "selected",
    "filter",
    "query",
    "timestamp",
    "payload",
    "details",
    "error",
]
_TYPES = ["SessionEntry", "TreeNode", "AgentMessage", "string", "number", "boolean", "Usage", "Model", "void"]
_WORD_TEXT = (
    "the a an to of in on for with from by and or but if then so because when while after before this "
    "that these it its we you they should could would will can must need want keep make use add remove "
    "fix move check read write update change test run build parse render load save open close return "
    "handle call file files line lines function method class type value values entry entries tree node "
    "branch leaf path session message messages tool output input error bug case test tests change "
    "changes code module import state context summary model token tokens cost label selector filter "
    "search key order list map set first last next previous new old current parent child children root "
    "depth width height size time now again still already only also just really quite simple clear exact "
    "correct wrong missing empty large small long short fast slow same different other each every all "
    "some none more less"
)
_WORDS = tuple(_WORD_TEXT.split())
# A few non-ASCII words so that the escaping and UTF-8 paths of readers are exercised (real sessions are full
# of arrows, dashes, box-drawing characters and the odd non-English word).
_FANCY = ["→", "—", "✓", "…", "•", "café", "naïve", "über", "日本語", "→ done", "├──", "└─", "❯", "≥", "λ"]
_LABELS = [
    "checkpoint",
    "before-refactor",
    "good state",
    "bug repro",
    "wip",
    "baseline",
    "try-2",
    "✓ tests pass",
]
_THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"]
_ROLES = ["default", "smol", "slow", "plan", "temporary"]
_CUSTOM_TYPES = ["todo-state", "user-todo-edit", "plan-progress", "lsp-diagnostics"]


class _Model:
    __slots__ = ("api", "provider", "id", "prices", "anthropic")

    def __init__(
        self, api: str, provider: str, model_id: str, prices: tuple[float, float, float, float]
    ) -> None:
        self.api = api
        self.provider = provider
        self.id = model_id
        # USD per million tokens: input, output, cacheRead, cacheWrite.
        self.prices = prices
        self.anthropic = provider == "anthropic"


_MODELS = [
    _Model("anthropic-messages", "anthropic", "claude-sonnet-4-5", (3.0, 15.0, 0.3, 3.75)),
    _Model("anthropic-messages", "anthropic", "claude-opus-4-5", (5.0, 25.0, 0.5, 6.25)),
    _Model("openai-responses", "openai", "gpt-5.1-codex", (1.25, 10.0, 0.125, 0.0)),
    _Model("anthropic-messages", "anthropic", "claude-haiku-4-5", (1.0, 5.0, 0.1, 1.25)),
]

# One knob for the overall file size: every heavy-tailed text length is drawn around median * _SIZE_SCALE.
# Tuned so that 100,000 entries come out at about 250 MB (2.5 KB per line on average, like busy real sessions
# whose tool output dominates).
_SIZE_SCALE = 0.88

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# Context size (estimated tokens) at which the synthetic agent compacts. Real omp compacts near the model's
# window minus the reserve (~180k for a 200k model); with ~4 chars per token this yields a compaction every
# ~250-400 entries, i.e. a few hundred compactions in a 100k-entry session.
_COMPACT_AT_TOKENS = 170_000


def _iso(ms: int) -> str:
    """``new Date(ms).toISOString()``: UTC, exactly three fraction digits, a literal ``Z``."""
    dt = datetime.fromtimestamp(ms // 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class _Corpus:
    """A pool of pre-generated lines from which texts of any length are cut quickly.

    Generating 250 MB word by word would take minutes; cutting a contiguous run of lines out of the pool (with
    cumulative lengths and ``bisect``) costs one slice and one join per text.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines + lines  # doubled so any start index has a full cycle after it
        self.n = len(lines)
        cum = [0]
        for line in self.lines:
            cum.append(cum[-1] + len(line) + 1)
        self.cum = cum

    def text(self, rng: random.Random, chars: int) -> str:
        """About ``chars`` characters (whole lines, at least one) starting at a random line."""
        start = rng.randrange(self.n)
        base = self.cum[start]
        total = self.cum[start + self.n] - base
        if chars >= total:
            # Longer than the whole pool: repeat it (only for very large requests).
            reps = chars // total + 1
            return "\n".join(self.lines[start : start + self.n] * reps)[:chars]
        end = bisect.bisect_left(self.cum, base + chars, start + 1)
        return "\n".join(self.lines[start:end])


def _make_code_corpus(rng: random.Random, n: int) -> _Corpus:
    lines: list[str] = []
    depth = 0
    for _ in range(n):
        indent = "\t" * depth
        a, b, c = rng.choice(_IDENTS), rng.choice(_IDENTS), rng.choice(_IDENTS)
        t = rng.choice(_TYPES)
        kind = rng.random()
        if kind < 0.18:
            line = f"{indent}const {a} = {b}.{c}({rng.choice(_IDENTS)}, {rng.randint(0, 500)});"
        elif kind < 0.30:
            line = f'{indent}if ({a}.{b} === "{rng.choice(_WORDS)}") {{'
            depth = min(depth + 1, 6)
        elif kind < 0.40 and depth > 0:
            depth -= 1
            line = "\t" * depth + "}"
        elif kind < 0.48:
            line = f"{indent}// {' '.join(rng.choice(_WORDS) for _ in range(rng.randint(3, 10)))}"
        elif kind < 0.55:
            line = f"{indent}return {a}.{b}.map(({c}) => {c}.{rng.choice(_IDENTS)});"
        elif kind < 0.60:
            line = f'import {{ {t}, {a} }} from "./{rng.choice(_STEMS)}.js";'
        elif kind < 0.66:
            line = f"{indent}export function {a}{b.capitalize()}({c}: {t}): {rng.choice(_TYPES)} {{"
            depth = min(depth + 1, 6)
        elif kind < 0.72:
            line = f"{indent}for (const {a} of this.#{b}) {{"
            depth = min(depth + 1, 6)
        elif kind < 0.76:
            line = ""
        elif kind < 0.80:
            word, fancy = rng.choice(_WORDS), rng.choice(_FANCY)
            line = f'{indent}throw new Error(`{a} ${{{b}}} not found: "{word}" {fancy}`);'
        elif kind < 0.86:
            line = f"{indent}{a}.{b} = {c} ?? {rng.choice(['null', 'undefined', '0', '[]', '{}', 'false'])};"
        elif kind < 0.92:
            n, d = rng.randint(1, 9999), rng.choice(_IDENTS)
            line = f"{indent}await this.{a}({b}, {{ {c}: {n}, {d}: true }});"
        else:
            line = f"{indent}def {a}_{b}(self, {c}: {t}) -> None:  # {rng.choice(_FANCY)}"
        lines.append(line)
    return _Corpus(lines)


def _make_prose_corpus(rng: random.Random, n: int) -> _Corpus:
    lines: list[str] = []
    for _ in range(n):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 22))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), f"`{rng.choice(_IDENTS)}`")
        if rng.random() < 0.12:
            words.insert(rng.randrange(len(words)), rng.choice(_FANCY))
        sentence = " ".join(words)
        lines.append(sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", ":", "?", "!"]))
    return _Corpus(lines)


class _Generator:
    """Simulates one long omp session; :meth:`run` yields the serialized lines."""

    def __init__(self, entries: int, seed: int) -> None:
        self.target = entries
        self.rng = rng = random.Random(seed)
        self.code = _make_code_corpus(rng, 5000)
        self.prose = _make_prose_corpus(rng, 3000)
        self.files = [
            rng.choice(_DIRS)
            + "/"
            + rng.choice(_STEMS)
            + rng.choice(["", "-utils", "-types"])
            + rng.choice(_EXTS)
            for _ in range(240)
        ]
        project = rng.choice(_PROJECTS)
        self.cwd = f"/home/{rng.choice(_USERS)}/work/{project}"
        # Somewhere in 2026, deterministic for the seed.
        self.now = 1_767_225_600_000 + rng.randrange(300 * 86_400_000)
        self.ids: set[str] = (
            set()
        )  # membership only: never iterated (iteration order depends on the hash seed)
        self.leaf: str | None = None
        # The current path, root first, as parallel lists of ids and kinds ("user", "assistant", "toolResult",
        # "compaction", "other"). Truncated on rewinds, swapped on excursions.
        self.path: list[str] = []
        self.kinds: list[str] = []
        self.out: list[str] = []
        self.count = 0
        self.model = _MODELS[0]
        self.context_tokens = 12_000  # estimated context size (system prompt and tools count too)
        self.last_compaction_index = -1  # index in self.path of the last compaction on the path
        self.labelled: dict[str, str] = {}  # target id -> label, insertion ordered (deterministic)
        self.read_files: dict[str, None] = {}
        self.modified_files: dict[str, None] = {}
        self.turns = 0

    # -- primitives ----------------------------------------------------------------------------------------

    def _tick(self, lo: int, hi: int) -> int:
        """Advance the clock by a random number of ms and return the new time."""
        self.now += self.rng.randint(lo, hi)
        return self.now

    def _new_id(self) -> str:
        # omp v15: the last 8 hex chars of a random UUID, retried until unique in the file.
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def _emit(self, entry: dict[str, Any], kind: str) -> str:
        """Serialize an entry whose base keys are already set, make it the leaf and extend the path."""
        line = dumps(entry)
        self.out.append(line)
        self.count += 1
        if kind in ("user", "assistant", "toolResult"):
            # What the model sees grows with every message (a rough chars/4 token estimate).
            self.context_tokens += len(line) // 4
        entry_id: str = entry["id"]
        self.leaf = entry_id
        self.path.append(entry_id)
        self.kinds.append(kind)
        return entry_id

    def _base(self, entry_type: str) -> dict[str, Any]:
        return {
            "type": entry_type,
            "id": self._new_id(),
            "parentId": self.leaf,
            "timestamp": _iso(self._tick(1, 40)),
        }

    def _append(self, entry_type: str, kind: str = "other", **fields: Any) -> str:
        entry = self._base(entry_type)
        entry.update(fields)
        return self._emit(entry, kind)

    def _append_message(self, message: dict[str, Any], kind: str, entry_delay: int = 2) -> str:
        # The entry is written a moment after the message object was created (message.timestamp <= entry).
        self.now += self.rng.randint(0, entry_delay)
        entry: dict[str, Any] = {
            "type": "message",
            "id": self._new_id(),
            "parentId": self.leaf,
            "timestamp": _iso(self.now),
            "message": message,
        }
        return self._emit(entry, kind)

    # -- random content --------------------------------------------------------------------------------------

    def _heavy(self, median: float, sigma: float, cap: int, floor: int = 1) -> int:
        """A lognormal size (heavy right tail), clamped to [floor, cap]."""
        return max(floor, min(cap, int(self.rng.lognormvariate(math.log(median * _SIZE_SCALE), sigma))))

    def _sentences(self, chars: int) -> str:
        return self.prose.text(self.rng, chars).replace("\n", " ")

    def _paragraphs(self, chars: int) -> str:
        text = self.prose.text(self.rng, chars)
        return text.replace("\n", "\n\n") if self.rng.random() < 0.5 else text

    def _signature(self, chars: int) -> str:
        return base64.b64encode(self.rng.randbytes(chars * 3 // 4)).decode("ascii")

    def _tool_call_id(self) -> str:
        rng = self.rng
        if self.model.anthropic:
            return "toolu_01" + "".join(rng.choices(_B62, k=22))
        return f"call_{''.join(rng.choices(_B62, k=24))}|fc_{rng.getrandbits(160):040x}"

    def _file(self) -> str:
        # Zipf-ish: a few files are touched over and over.
        return self.files[min(len(self.files) - 1, int(self.rng.paretovariate(1.2)) - 1)]

    def _usage(self, output_tokens: int) -> dict[str, Any]:
        rng = self.rng
        model = self.model
        ctx = self.context_tokens
        cache_write = min(ctx, rng.randint(50, 4000)) if rng.random() < 0.85 else ctx // 3
        cache_read = max(0, ctx - cache_write - 3) if rng.random() < 0.95 else 0
        inp = ctx - cache_write - cache_read
        p_in, p_out, p_cr, p_cw = model.prices
        # Same arithmetic as pi-ai's calculateCost: tokens * price / 1e6, giving real float artifacts.
        cost_in = p_in / 1_000_000 * inp
        cost_out = p_out / 1_000_000 * output_tokens
        cost_cr = p_cr / 1_000_000 * cache_read
        cost_cw = p_cw / 1_000_000 * cache_write
        usage: dict[str, Any] = {
            "input": inp,
            "output": output_tokens,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": inp + output_tokens + cache_read + cache_write,
            "cost": {
                "input": cost_in,
                "output": cost_out,
                "cacheRead": cost_cr,
                "cacheWrite": cost_cw,
                "total": cost_in + cost_out + cost_cr + cost_cw,
            },
        }
        if model.anthropic and rng.random() < 0.5:
            usage["cttl"] = {"ephemeral5m": cache_write, "ephemeral1h": 0}
        if not model.anthropic:
            usage["reasoningTokens"] = rng.randint(0, output_tokens)
        return usage

    # -- tool calls and results ------------------------------------------------------------------------------

    def _tool_call(self) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        r = rng.random()
        if r < 0.38:
            path = self._file()
            args: dict[str, Any] = {"path": path}
            if rng.random() < 0.25:
                args["offset"] = rng.randint(1, 800)
                args["limit"] = rng.choice([50, 100, 200, 400])
            self.read_files[path] = None
            return "read", args
        if r < 0.62:
            cmd = rng.choice(
                [
                    f"cd {self.cwd} && npm run check 2>&1 | tail -{rng.randint(10, 60)}",
                    f"git diff --stat HEAD~{rng.randint(1, 5)}",
                    f'grep -rn "{rng.choice(_IDENTS)}" {rng.choice(_DIRS)} | head -{rng.randint(10, 50)}',
                    f"bun test {self._file()}",
                    "git status --short",
                    f"ls -la {rng.choice(_DIRS)}",
                    f"python -m pytest tests/ -q -k {rng.choice(_IDENTS)}",
                    f"wc -l {self._file()} {self._file()}",
                ]
            )
            args = {"command": cmd}
            if rng.random() < 0.3:
                args["timeout"] = rng.choice([30, 60, 120, 300])
            return "bash", args
        if r < 0.82:
            path = self._file()
            old = self.code.text(rng, self._heavy(240, 1.0, 12_000))
            new = self.code.text(rng, self._heavy(270, 1.0, 14_000))
            self.modified_files[path] = None
            return "edit", {"path": path, "oldText": old, "newText": new}
        if r < 0.90:
            path = self._file()
            self.modified_files[path] = None
            return "write", {"path": path, "content": self.code.text(rng, self._heavy(2000, 1.0, 40_000))}
        args = {"pattern": rf"{rng.choice(_IDENTS)}\s*\(", "path": rng.choice(_DIRS)}
        if rng.random() < 0.4:
            args["glob"] = rng.choice(["*.ts", "*.py", "**/*.tsx"])
        return "grep", args

    def _tool_result(self, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        rng = self.rng
        is_error = rng.random() < 0.06
        details: Any = None
        if is_error:
            text = rng.choice(
                [
                    f"ENOENT: no such file or directory, open '{self.cwd}/{args.get('path', 'x')}'",
                    "Command exited with code 1",
                    f"Could not find the exact text in {args.get('path', 'file')}. "
                    "The old text must match exactly.",
                ]
            )
            if name == "bash":
                text = self.code.text(rng, self._heavy(400, 1.2, 8000)) + "\n\nCommand exited with code 1"
            details = {}
        elif name == "read":
            text = self.code.text(rng, self._heavy(2700, 1.15, 60_000))
        elif name == "bash":
            text = self.code.text(rng, self._heavy(700, 1.5, 50_000))
        elif name == "grep":
            lines = [
                f"{self._file()}:{rng.randint(1, 900)}:{self.code.text(rng, 1).strip()}"
                for _ in range(self._heavy(12, 1.0, 200))
            ]
            text = "\n".join(lines)
        elif name == "edit":
            old, new = args["oldText"], args["newText"]
            text = (
                f"Successfully replaced text in {args['path']}. "
                f"Changed {len(old)} characters to {len(new)} characters."
            )
            start = rng.randint(1, 700)
            diff = ["     ..."]
            diff += [f"-{start + i:4d} {line}" for i, line in enumerate(old.split("\n")[:60])]
            diff += [f"+{start + i:4d} {line}" for i, line in enumerate(new.split("\n")[:60])]
            details = {"diff": "\n".join(diff), "firstChangedLine": start}
        else:  # write
            text = f"Successfully wrote {len(args['content'].encode())} bytes to {args['path']}"
        message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
        }
        if details is not None:
            message["details"] = details
        message["isError"] = is_error
        message["timestamp"] = self._tick(5, 9000 if name == "bash" else 400)
        return message

    # -- conversation building blocks -----------------------------------------------------------------------

    def _user(self) -> None:
        rng = self.rng
        self._tick(4_000, 600_000)  # the human thinks and types
        text = self._paragraphs(self._heavy(220, 1.1, 6000, floor=8))
        if rng.random() < 0.15:
            text += "\n\n```\n" + self.code.text(rng, self._heavy(600, 1.0, 8000)) + "\n```"
        message: dict[str, Any] = {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "attribution": "user",
            "timestamp": self.now,
        }
        self._append_message(message, "user")

    def _assistant(self, final: bool) -> list[tuple[str, str, dict[str, Any]]]:
        """Append one assistant message; returns its tool calls (id, name, arguments)."""
        rng = self.rng
        model = self.model
        started = self._tick(20, 400)
        content: list[dict[str, Any]] = []
        if rng.random() < 0.75:
            block: dict[str, Any] = {
                "type": "thinking",
                "thinking": self._paragraphs(self._heavy(380, 1.0, 9000)),
            }
            if model.anthropic:
                block["thinkingSignature"] = self._signature(self._heavy(600, 0.5, 3000, floor=100))
            else:
                block["thinkingSignature"] = dumps(
                    {"type": "reasoning", "id": f"rs_{rng.getrandbits(192):048x}", "summary": []}
                )
            content.append(block)
        calls: list[tuple[str, str, dict[str, Any]]] = []
        if final or rng.random() < 0.55:
            text_block: dict[str, Any] = {
                "type": "text",
                "text": self._paragraphs(self._heavy(350 if final else 120, 1.0, 8000)),
            }
            if not model.anthropic:
                text_block["textSignature"] = f"msg_{rng.getrandbits(192):048x}"
            content.append(text_block)
        if not final:
            for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 4)):
                name, args = self._tool_call()
                call_id = self._tool_call_id()
                calls.append((call_id, name, args))
                content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
        aborted = rng.random() < 0.01
        output_tokens = sum(len(dumps(block)) for block in content) // 4 + rng.randint(5, 60)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "usage": self._usage(output_tokens),
            "stopReason": "aborted" if aborted else ("toolUse" if calls else "stop"),
            "timestamp": started,
        }
        if aborted:
            message["errorMessage"] = "Request was aborted"
            calls = []
        elif model.anthropic:
            message["responseId"] = "msg_01" + "".join(rng.choices(_B62, k=22))
        duration = rng.randint(600, 45_000)
        message["duration"] = duration
        message["ttft"] = rng.randint(250, min(duration, 6000))
        self.now = started + duration
        self._append_message(message, "assistant")
        return calls

    def _turn(self) -> None:
        """A user prompt, then tool-use rounds, then a final answer."""
        rng = self.rng
        self.turns += 1
        self._user()
        rounds = min(40, int(rng.expovariate(1 / 4.0)))
        for _ in range(rounds):
            calls = self._assistant(final=False)
            if not calls:
                return  # aborted mid-turn
            for call_id, name, args in calls:
                self._append_message(self._tool_result(call_id, name, args), "toolResult")
        self._assistant(final=True)
        if self.context_tokens > _COMPACT_AT_TOKENS:
            self._compaction()

    def _file_tags(self) -> tuple[str, dict[str, list[str]]]:
        modified = sorted(self.modified_files)
        read = sorted(f for f in self.read_files if f not in self.modified_files)
        tags = ""
        if read:
            tags += "<read-files>\n" + "\\n".join(read[:20]) + "\n</read-files>"
        if modified:
            tags += "<modified-files>\n" + "\\n".join(modified[:20]) + "\n</modified-files>"
        return tags, {"readFiles": read, "modifiedFiles": modified}

    def _summary_body(self) -> str:
        p = self._sentences
        return (
            f"## Goal\n{p(160)}\n\n## Constraints & Preferences\n- {p(90)}\n- {p(70)}\n\n"
            f"## Progress\n### Done\n- [x] {p(80)}\n- [x] {p(100)}\n\n### In Progress\n- [ ] {p(90)}\n\n"
            f"### Blocked\n- (none)\n\n## Key Decisions\n- **{self.rng.choice(_WORDS)}**: {p(140)}\n\n"
            f"## Next Steps\n1. {p(80)}\n2. {p(80)}"
        )

    def _compaction(self) -> None:
        """Compact: keep the last few turns verbatim (firstKeptEntryId is a user message on the path)."""
        rng = self.rng
        path, kinds = self.path, self.kinds
        lo = self.last_compaction_index + 1
        users = [i for i in range(max(lo, len(path) - 400), len(path)) if kinds[i] == "user"]
        if not users:
            return
        keep = users[-min(len(users), rng.randint(1, 3))]
        tags, details = self._file_tags()
        summary = self._summary_body() + ("\n\n" + tags if tags else "")
        tokens_before = self.context_tokens
        fields: dict[str, Any] = {
            "summary": summary,
            "shortSummary": self._sentences(200),
            "firstKeptEntryId": path[keep],
            "tokensBefore": tokens_before,
            "details": details,
            "fromExtension": False,
        }
        if rng.random() < 0.3:
            fields["preserveData"] = {}  # manual /compact writes at least {}
        self._tick(8_000, 60_000)  # summarization takes a while
        self._append("compaction", "compaction", **fields)
        self.last_compaction_index = len(self.path) - 1
        self.context_tokens = 12_000 + len(summary) // 4 + (tokens_before // 12)
        self.read_files.clear()
        self.modified_files.clear()

    def _branch_summary(self, branch_point: str) -> None:
        tags, details = self._file_tags()
        summary = (
            "The user explored a different conversation branch before returning here.\n"
            "Summary of that exploration:" + self._summary_body() + ("\n\n" + tags if tags else "")
        )
        self._tick(3_000, 30_000)
        self._append(
            "branch_summary",
            fromId=branch_point,
            summary=summary,
            details=details,
            fromExtension=False,
        )

    def _move_to(self, index: int) -> None:
        """Make ``path[index]`` the leaf (as ``branch()`` does); the path is cut after it."""
        del self.path[index + 1 :]
        del self.kinds[index + 1 :]
        self.leaf = self.path[index]
        if self.last_compaction_index > index:
            self.last_compaction_index = next(
                (i for i in range(index, -1, -1) if self.kinds[i] == "compaction"), -1
            )

    def _recent_user_indexes(self, window: int) -> list[int]:
        start = max(self.last_compaction_index + 1, len(self.path) - window)
        return [i for i in range(start, len(self.path)) if self.kinds[i] == "user"]

    def _rewind(self) -> None:
        """Go back to just before a recent user message (edit & resend); sometimes summarize what was left."""
        users = self._recent_user_indexes(120)
        if not users or users[-1] == 0:
            return
        target = users[-self.rng.randint(1, min(3, len(users)))]
        self._move_to(target - 1)
        if self.rng.random() < 0.4:
            self._branch_summary(self.path[-1])

    def _excursion(self) -> None:
        """Jump far back in the tree, explore for a few turns, then return to where we were."""
        rng = self.rng
        if len(self.path) < 20:
            return
        saved_path, saved_kinds = self.path[:], self.kinds[:]
        saved_leaf = self.path[-1]
        saved = (self.last_compaction_index, self.context_tokens)
        target = rng.randrange(1, len(self.path) - 1)
        self._move_to(target)
        if rng.random() < 0.3:
            self._branch_summary(self.path[-1])
        for _ in range(rng.randint(1, 4)):
            if self.count >= self.target:
                return
            self._turn_or_extra()
        self.path, self.kinds, self.leaf = saved_path, saved_kinds, saved_leaf
        self.last_compaction_index, self.context_tokens = saved
        if rng.random() < 0.5:
            self._branch_summary(saved_leaf)

    def _extra(self) -> None:
        """One of the less frequent entry types."""
        rng = self.rng
        r = rng.random()
        if r < 0.22:
            self.model = rng.choice(_MODELS)
            role = rng.choice(_ROLES)
            fields: dict[str, Any] = {"model": f"{self.model.provider}/{self.model.id}"}
            if role != "default" or rng.random() < 0.5:
                fields["role"] = role
            self._append("model_change", **fields)
        elif r < 0.42:
            self._append("thinking_level_change", thinkingLevel=rng.choice(_THINKING_LEVELS))
        elif r < 0.62:
            # Label a recent user message (or, now and then, anything known); labels move the leaf.
            users = self._recent_user_indexes(300)
            target = self.path[rng.choice(users)] if users else self.path[rng.randrange(len(self.path))]
            label = rng.choice(_LABELS)
            self.labelled.pop(target, None)
            self.labelled[target] = label
            self._append("label", targetId=target, label=label)
        elif r < 0.72 and self.labelled:
            target = list(self.labelled)[rng.randrange(len(self.labelled))]
            del self.labelled[target]
            self._append("label", targetId=target)  # clearing: no "label" key at all
        elif r < 0.84:
            custom_type = rng.choice(_CUSTOM_TYPES)
            todos = [
                {
                    "content": self._sentences(50),
                    "status": rng.choice(["pending", "in_progress", "completed"]),
                }
                for _ in range(rng.randint(1, 8))
            ]
            # Custom entries put their payload keys before the base keys (§5).
            entry: dict[str, Any] = {"type": "custom", "customType": custom_type, "data": {"todos": todos}}
            entry.update(self._base("custom"))
            self._emit(entry, "other")
        elif r < 0.90:
            entry = {
                "type": "custom_message",
                "customType": "background-job",
                "content": f"Background job finished: {self._sentences(120)}",
                "display": rng.random() < 0.7,
                "details": {"jobId": f"job_{rng.getrandbits(32):08x}", "exitCode": 0},
                "attribution": "agent",
            }
            base = self._base("custom_message")
            entry.update({k: base[k] for k in ("id", "parentId", "timestamp")})
            self._emit(entry, "other")
        elif r < 0.94:
            mode = rng.choice(["plan", "none", "plan_paused"])
            if mode == "plan":
                self._append("mode_change", mode=mode, data={"planFilePath": "local://PLAN.md"})
            else:
                self._append("mode_change", mode=mode)
        elif r < 0.97:
            self._append(
                "service_tier_change", serviceTier=rng.choice(["auto", "default", "flex", "priority", None])
            )
        else:
            self._append(
                "ttsr_injection", injectedRules=rng.sample(["no-any", "prefer-bun", "tests-first", "tabs"], 2)
            )

    def _bash_execution(self) -> None:
        """A user ``!command`` (bashExecution message)."""
        rng = self.rng
        self._tick(3_000, 120_000)
        message: dict[str, Any] = {
            "role": "bashExecution",
            "command": rng.choice(["git log --oneline | head", "ls", "make test", "cat package.json"]),
            "output": self.code.text(rng, self._heavy(800, 1.2, 30_000)),
            "exitCode": rng.choice([0, 0, 0, 1]),
            "cancelled": False,
            "truncated": False,
            "timestamp": self.now,
        }
        if rng.random() < 0.2:
            message["excludeFromContext"] = True
        self._append_message(message, "user")

    def _turn_or_extra(self) -> None:
        r = self.rng.random()
        if r < 0.80:
            self._turn()
        elif r < 0.985:
            self._extra()
        else:
            self._bash_execution()

    # -- driver ----------------------------------------------------------------------------------------------

    def header(self) -> str:
        rng = self.rng
        ms = self.now
        # UUIDv7: 48-bit ms timestamp, version 7, variant 10xx, random rest.
        hexstr = f"{ms:012x}"
        session_id = (
            f"{hexstr[:8]}-{hexstr[8:12]}-7{rng.getrandbits(12):03x}-"
            f"{8 + rng.getrandbits(2):x}{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
        )
        return dumps(
            {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(ms), "cwd": self.cwd}
        )

    def run(self) -> Iterator[str]:
        yield self.header()
        # Every new omp SDK session starts with model_change (no role) + thinking_level_change (§5.3).
        self._append("model_change", model=f"{self.model.provider}/{self.model.id}")
        self._append("thinking_level_change", thinkingLevel="medium")
        rng = self.rng
        while self.count < self.target:
            r = rng.random()
            if r < 0.035 and self.turns > 2:
                self._rewind()
            elif r < 0.05 and self.turns > 5:
                self._excursion()
            else:
                self._turn_or_extra()
            yield from self._drain()
        yield from self._drain()

    def _drain(self) -> Iterator[str]:
        out = self.out
        if not out:
            return
        # Stop exactly at the requested number of entries (count includes what is buffered).
        excess = self.count - self.target
        if excess > 0:
            del out[len(out) - excess :]
            self.count = self.target
        yield from out
        out.clear()


def generate_session(entries: int, seed: int) -> Iterator[str]:
    """Yield the lines (without newlines) of a synthetic omp v15-style session.

    The header comes first, then exactly ``entries`` entries. The output depends only on ``(entries, seed)``;
    the session for a smaller ``entries`` is a prefix of the one for a larger ``entries`` with the same seed.
    """
    if entries < 0:
        raise ValueError("entries must be >= 0")
    return _Generator(entries, seed).run()


def write_session(path: str | os.PathLike[str], entries: int, seed: int) -> int:
    """Write :func:`generate_session` output to ``path`` (UTF-8, one line per entry, trailing newline).

    The file is written to a temporary name next to ``path`` and renamed into place, so an interrupted run
    never leaves a half-written session behind. Returns the number of bytes written.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    size = 0
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            batch: list[str] = []
            for line in generate_session(entries, seed):
                batch.append(line)
                if len(batch) >= 512:
                    chunk = "\n".join(batch) + "\n"
                    size += len(chunk.encode("utf-8"))
                    fh.write(chunk)
                    batch.clear()
            if batch:
                chunk = "\n".join(batch) + "\n"
                size += len(chunk.encode("utf-8"))
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return size
