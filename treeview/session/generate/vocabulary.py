"""The generator's fixed vocabulary (word lists, models) and its size knobs."""

from __future__ import annotations

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
