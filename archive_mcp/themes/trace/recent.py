"""A bounded map of what a trace computed, kept for the next trace (most recently used first).

The trace keeps three things between calls, each under a key that changes when its input does
(so nothing is ever invalidated by hand): parsed session files (`trace.ParsedFiles`), each
turn's flag and gists (`turn_memo.TurnMemo`), each text's terms (`terms.TextTerms`). They share
this: a thread-safe map bounded by the summed `size` of its values (1 a value unless told), where
the least recently used go first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cachetools import LRUCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(_: object) -> int:
    return 1


class Recent(Generic[K, V]):
    """At most `most` (summed `size` of the values) of the most recently used values: a
    `cachetools.LRUCache` behind a lock, which keeps the first value kept under a key."""

    def __init__(self, most: int, size: Callable[[V], int] = _one) -> None:
        self.most = most
        self.size = size
        self.items: LRUCache[K, V] = LRUCache(most, getsizeof=size)
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.items)

    @property
    def used(self) -> int:
        """The summed size of the values kept."""
        return int(self.items.currsize)

    def get(self, key: K) -> V | None:
        """The value kept under `key` (now the most recently used), else None."""
        with self.lock:
            return self.items.get(key)

    def keep(self, key: K, value: V) -> V:
        """Keep `value` under `key` unless a value is kept there already (returned then) or it
        alone is larger than the bound (returned, not kept); the least recently used go first."""
        with self.lock:
            kept = self.items.get(key)
            if kept is not None:
                return kept
            if self.size(value) <= self.most:
                self.items[key] = value
            return value
