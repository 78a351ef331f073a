"""What a server process loads before its first request, so that the first page a person opens after a restart
does not pay for it: the URLconf with every view, Pygments' lexer table, the template engine with its tag
libraries and every template of the site compiled (the cached loader keeps them), and the Markdown renderer.

Called once per process from ``sessions_site/asgi.py`` (daphne imports it before it listens).
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.template import TemplateDoesNotExist, TemplateSyntaxError
from django.template.loader import get_template
from django.urls import resolve

logger = logging.getLogger(__name__)

__all__ = ["warm_up"]


def _template_names() -> list[str]:
    names: list[str] = []
    for config in settings.TEMPLATES:
        for directory in config.get("DIRS", []):
            root = Path(directory)
            names.extend(str(path.relative_to(root)) for path in sorted(root.rglob("*.html")))
    return names


def warm_up() -> None:
    """Load and compile what the first requests need; a failure only loses the head start (and is logged)."""
    from treeview.render.highlight import lexer_for_filename
    from treeview.render.markdown import render_markdown

    resolve("/")
    lexer_for_filename("warm.py")
    for name in _template_names():
        try:
            get_template(name)
        except (TemplateDoesNotExist, TemplateSyntaxError):
            logger.warning("could not compile the template %s ahead of time", name, exc_info=True)
    # markdown-it's rule chains and a highlighted fence (Pygments' formatter and the Python lexer).
    render_markdown("*warm* `up`\n\n```python\nx = 1\n```\n")
