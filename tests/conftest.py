"""Fixtures shared by several test modules."""

from collections.abc import Iterator

import pytest
from django.core.cache import cache

from tests.browser import browser, page

__all__ = ["browser", "page"]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Sign-in failure counts (treeview/throttle.py) never carry from one test to the next."""
    cache.clear()
    yield
    cache.clear()
