"""What a model's tokens cost: a versioned table of list prices, overridable from the config.

Prices are US dollars per million tokens, with cache reads and cache writes priced apart from
fresh input (their rates differ by 10x or more). A model is matched by the longest key that its
name starts with (`claude-sonnet-4` covers `claude-sonnet-4-5-20250929`). The config file can
add or replace entries under `[prices."MODEL"]` with `input`, `output`, `cache_read` and
`cache_write`. A model no entry matches has no price: the usage page names it and counts its
tokens without a cost, never with a guessed one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from archive_mcp.errors import InvalidArgument

VERSION = "2026-01"  # the providers' list prices as published when this table was written


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, input: int, output: int, cache_read: int, cache_write: int) -> float:
        per = 1_000_000
        return (
            input * self.input
            + output * self.output
            + cache_read * self.cache_read
            + cache_write * self.cache_write
        ) / per


# input, output, cache read, cache write ($ / 1M tokens); cache write is the 5-minute rate where
# a provider has several, and equals input where the provider bills no write.
TABLE: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4": Price(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.30, 3.75),
    "claude-3-5-sonnet": Price(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.0, 0.08, 1.0),
    "gpt-5": Price(1.25, 10.0, 0.125, 1.25),
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.25),
    "gpt-5-nano": Price(0.05, 0.40, 0.005, 0.05),
    "gpt-4.1": Price(2.0, 8.0, 0.50, 2.0),
    "gpt-4o": Price(2.5, 10.0, 1.25, 2.5),
    "o3": Price(2.0, 8.0, 0.50, 2.0),
    "o4-mini": Price(1.10, 4.40, 0.275, 1.10),
    "gemini-2.5-pro": Price(1.25, 10.0, 0.31, 1.25),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.075, 0.30),
    "kimi-k2": Price(0.60, 2.50, 0.15, 0.60),
    "qwen3-coder": Price(1.0, 5.0, 0.10, 1.0),
}


@dataclass(frozen=True)
class Prices:
    """The table in force: the shipped one with the config's entries over it."""

    table: dict[str, Price]
    version: str
    overridden: tuple[str, ...] = ()

    def of(self, model: str | None) -> Price | None:
        """The price of `model`: the longest key its name starts with; None when none does."""
        if not model:
            return None
        name = model.lower().rsplit("/", 1)[-1]  # "anthropic/claude-..." as routers write it
        best = max((k for k in self.table if name.startswith(k)), key=len, default=None)
        return self.table[best] if best else None


def prices(config: Mapping[str, Any] | None = None) -> Prices:
    """The shipped table with `config["prices"]` (the config file's `[prices."MODEL"]`) over it."""
    table = dict(TABLE)
    given = (config or {}).get("prices") or {}
    if not isinstance(given, Mapping):
        raise InvalidArgument(
            'the config\'s `prices` is a table of models: [prices."MODEL"] input = 3.0 ...'
        )
    for model, entry in given.items():
        if not isinstance(entry, Mapping):
            raise InvalidArgument(
                f'prices."{model}": give input, output, cache_read and cache_write ($ per 1M)'
            )
        base = table.get(str(model).lower(), Price(0.0, 0.0, 0.0, 0.0))
        try:
            table[str(model).lower()] = Price(
                float(entry.get("input", base.input)),
                float(entry.get("output", base.output)),
                float(entry.get("cache_read", base.cache_read)),
                float(entry.get("cache_write", base.cache_write)),
            )
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(f'prices."{model}": every price is a number ($ per 1M)') from exc
    overridden = tuple(sorted(str(m).lower() for m in given))
    return Prices(table, VERSION + (" + config" if overridden else ""), overridden)
