"""Iterators over cursor pages: follow `next_cursor` until the last page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

from jobsched_client.models import Page

T = TypeVar("T")


def iterate_pages(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
    """Every item of every page; `fetch(cursor)` reads one page (None: the first)."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.results
        if not page.next_cursor:
            return
        cursor = page.next_cursor


async def aiterate_pages(fetch: Callable[[str | None], Awaitable[Page[T]]]) -> AsyncIterator[T]:
    """The async twin of `iterate_pages`."""
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        for item in page.results:
            yield item
        if not page.next_cursor:
            return
        cursor = page.next_cursor
