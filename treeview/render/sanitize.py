"""The one HTML sanitizer of the conversation pane: every fragment built from session content passes here.

Session content is hostile input (a model or a tool can write anything), so generated HTML (Markdown,
Pygments) is cleaned with nh3 against a small allow-list before it is marked safe. Plain text goes through
Django's escaping instead (`format_html`, `escape`), never through `mark_safe` directly.
"""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from pygments.token import STANDARD_TYPES

# Pygments' short token classes (`k`, `s2`, `nf` ...): the only classes a highlighted span may carry.
PYGMENTS_CLASSES: frozenset[str] = frozenset(name for name in STANDARD_TYPES.values() if name)

# Classes that this package itself puts on elements (never taken from the content).
HIGHLIGHT_CLASS = "highlight"
IMAGE_ALT_CLASS = "md-image-alt"
CUT_NOTICE_CLASS = "render-cut"

ALLOWED_TAGS: frozenset[str] = frozenset(
    {
        "p",
        "br",
        "strong",
        "em",
        "del",
        "s",  # markdown-it's strikethrough
        "code",
        "pre",
        "span",
        "blockquote",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "hr",
    }
)

# `class` is not listed here: nh3 filters it through ALLOWED_CLASSES instead (the two cannot be combined).
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "ol": {"start"},
}

ALLOWED_CLASSES: dict[str, set[str]] = {
    "span": set(PYGMENTS_CLASSES) | {IMAGE_ALT_CLASS},
    "pre": {HIGHLIGHT_CLASS},
    "p": {CUT_NOTICE_CLASS},
}

ALLOWED_URL_SCHEMES: frozenset[str] = frozenset({"http", "https", "mailto"})
LINK_REL = "nofollow noopener noreferrer"

# Elements whose whole content is dropped, not only the tags (nh3 keeps the text of other unknown tags).
_CLEAN_CONTENT_TAGS = {"script", "style", "iframe", "noscript", "template", "svg", "math", "object", "embed"}


def _filter_attribute(tag: str, attribute: str, value: str) -> str | None:
    """Keep only plain numbers in `<ol start>`; every other allowed attribute passes unchanged."""
    if tag == "ol" and attribute == "start":
        return value if value.isascii() and value.isdigit() and len(value) <= 9 else None
    return value


_CLEANER = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    clean_content_tags=_CLEAN_CONTENT_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    attribute_filter=_filter_attribute,
    strip_comments=True,
    link_rel=LINK_REL,
    url_schemes=set(ALLOWED_URL_SCHEMES),
    allowed_classes=ALLOWED_CLASSES,
    # Relative links would point into Arbor itself (a click could hit one of its own URLs): drop them.
    url_relative="deny",
)


def sanitize(html: str) -> SafeString:
    """Clean generated HTML against the allow-list and mark the result safe."""
    return mark_safe(_CLEANER.clean(html))  # nh3 output only: the reason this module exists
