"""Fixtures shared by several test modules."""

from tests.browser import browser, page

__all__ = ["browser", "page"]
