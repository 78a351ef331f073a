"""Random content for entries: texts, signatures, usage, tool calls and tool results."""

from __future__ import annotations

import base64
import math
from typing import Any

from treeview.session.generate.primitives import _Primitives
from treeview.session.generate.vocabulary import _B62, _DIRS, _IDENTS, _SIZE_SCALE


class _Content(_Primitives):
    """Random content: text of heavy-tailed length, signatures, usage, tool calls and their results."""

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
