"""Pools of pre-generated code and prose lines from which texts of any length are cut quickly."""

from __future__ import annotations

import bisect
import random

from treeview.session.generate.vocabulary import _FANCY, _IDENTS, _STEMS, _TYPES, _WORDS


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
