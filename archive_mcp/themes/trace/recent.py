"""A bounded map of what a trace computed, kept for the next trace (most recently used first).

The trace keeps three things between calls, each under a key that changes when its input does
(so nothing is ever invalidated by hand): parsed session files (`trace.ParsedFiles`), each
turn's flag and gists (`turn_memo.TurnMemo`), each text's terms (`terms.TextTerms`). They share
this: a thread-safe map bounded by the summed `size` of its values (1 a value unless told), where
the least recently used go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(_: object) -> int:
    return 1


class Recent(Generic[K, V]):
    """At most `most` (summed `size` of the values) of the most recently used values."""

    def __init__(self, most: int, size: Callable[[V], int] = _one) -> None:
        self.most = most
        self.size = size
        self.used = 0
        self.items: OrderedDict[K, V] = OrderedDict()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.items)

    def get(self, key: K) -> V | None:
        """The value kept under `key` (now the most recently used), else None."""
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def keep(self, key: K, value: V) -> V:
        """Keep `value` under `key` unless a value is kept there already (returned then) or it
        alone is larger than the bound (returned, not kept); the least recently used go first."""
        size = self.size(value)
        with self.lock:
            kept = self.items.get(key)
            if kept is not None:
                self.items.move_to_end(key)
                return kept
            if size > self.most:
                return value
            self.items[key] = value
            self.used += size
            while self.used > self.most:
                _, old = self.items.popitem(last=False)
                self.used -= self.size(old)
            return value
