"""Private-key blocks (PEM, OpenSSH, PGP, PuTTY) and the public blocks that are not secrets."""

from __future__ import annotations

import re
from collections.abc import Iterator

# -- private-key blocks --------------------------------------------------------------------------------------

_PEM_BEGIN = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
)
_PUTTY = re.compile(r"PuTTY-User-Key-File-[0-9]+:")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=:,\-\s]++|\\[nr])*+")  # for a block whose END line is missing
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{16,}")
MAX_KEY_BLOCK = 64_000


def _private_key_spans(s: str) -> Iterator[tuple[int, int]]:
    """Whole private-key blocks, BEGIN line to END line (or to the end of the key material when cut off)."""
    pos = 0
    next_end = -2  # position of the next END marker at or after `pos` (-1: none), found once per marker
    while (m := _PEM_BEGIN.search(s, pos)) is not None:
        if next_end != -1 and next_end < m.end():
            next_end = s.find("-----END ", m.end())
            if next_end == -1:
                next_end = s.find("---- END ", m.end())
        if next_end != -1 and next_end - m.end() <= MAX_KEY_BLOCK:
            close = s.find("-----", next_end + 9, next_end + 200)
            close2 = s.find("----", next_end + 9, next_end + 200)
            end = close + 5 if close != -1 else (close2 + 4 if close2 != -1 else next_end + 9)
        else:  # truncated output: mask everything that still looks like key material
            end = _PEM_BODY.match(s, m.end(), m.end() + MAX_KEY_BLOCK).end()  # type: ignore[union-attr]
        # markers inside this region end at the same place: scan on after it (linear on hostile input)
        pos = max(end, m.end())
        material = _KEY_MATERIAL.finditer(s, m.end(), end)
        if next(material, None) is not None and next(material, None) is not None:
            yield m.start(), end  # a marker mentioned in prose, with no key after it, is no hit
    pos = 0
    while (m := _PUTTY.search(s, pos)) is not None:
        mac = s.find("Private-MAC:", m.end(), m.end() + MAX_KEY_BLOCK)
        if mac == -1:
            end = _PEM_BODY.match(s, m.end(), m.end() + MAX_KEY_BLOCK).end()  # type: ignore[union-attr]
        else:
            nl = s.find("\n", mac)
            end = len(s) if nl == -1 else nl
        pos = max(end, m.end())
        yield m.start(), end


_PUBLIC_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*(?:CERTIFICATE|PUBLIC KEY)(?: [A-Z]+)*)-----")


def _public_blocks(s: str) -> list[tuple[int, int]]:
    """Certificates and public keys: long base64 lines that are meant to be shared."""
    blocks = []
    for m in _PUBLIC_BEGIN.finditer(s):
        end = s.find("-----END", m.end(), m.end() + MAX_KEY_BLOCK)
        blocks.append((m.end(), len(s) if end == -1 else end))
    return blocks


def _inside(blocks: list[tuple[int, int]], pos: int) -> bool:
    return any(lo <= pos < hi for lo, hi in blocks)
