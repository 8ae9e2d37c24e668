"""The results a search keeps: at most `wanted` flat items in the provider's order, each raw result mapped only
while one is still wanted, duplicates (the same page under another URL form) dropped, within the search's budget.
A provider's page is read, its results taken, and the page dropped: nothing of it is kept but those items."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from websearch.mappers import MAPPERS, url_key
from websearch.providers import Provider

MAX_READ_PER_PAGE = 100  # raw results read of one page (every provider sends at most 50): the rest is ignored


class Results:
    def __init__(self, provider: Provider, wanted: int, remaining: Callable[[], float], late: Callable[[], Exception]):
        self.provider, self.wanted, self.remaining, self.late = provider, wanted, remaining, late
        self.items: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        self.duplicates = 0
        self.overlong_pages = 0  # pages with more than MAX_READ_PER_PAGE results
        self._map = MAPPERS[provider.name]

    @property
    def full(self) -> bool:
        return len(self.items) >= self.wanted

    def add(self, page: list[Any]) -> int:
        """Keeps the page's results in order until `wanted` are kept; returns how many it kept. Raises `late()` when
        the budget runs out while mapping (a page of hostile results costs time, and the deadline covers it)."""
        kept = 0
        if len(page) > MAX_READ_PER_PAGE:
            self.overlong_pages += 1
        for raw in page[:MAX_READ_PER_PAGE]:
            if self.full:
                break
            if self.remaining() <= 0:
                raise self.late()
            if not isinstance(raw, dict):
                continue
            item = self._map(self.provider, raw)
            key = url_key(item["url"]) if item["url"] else ""
            if key and key in self.seen:
                self.duplicates += 1
                continue
            if key:
                self.seen.add(key)
            self.items.append(item)
            kept += 1
        return kept
