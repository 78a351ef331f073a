"""Conversation building blocks: user and assistant turns, compactions, rewinds, excursions."""

from __future__ import annotations

from typing import Any

from treeview.session.generate.content import _Content
from treeview.session.generate.vocabulary import (
    _B62,
    _COMPACT_AT_TOKENS,
    _CUSTOM_TYPES,
    _LABELS,
    _MODELS,
    _ROLES,
    _THINKING_LEVELS,
    _WORDS,
)
from treeview.session.jsonl import dumps


class _Conversation(_Content):
    """Conversation building blocks: turns, compactions, branch summaries, rewinds, excursions, extras."""

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
