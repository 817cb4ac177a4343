"""Per-turn results of the trace's rules, kept by the turn's content for the next trace.

Two of the rules a trace runs read one turn at a time: does it set or change a course
(`decisions.flag_turns`) and what did it decide (`decisions.gist`). A trace runs them over every
member turn, and the same turns are traced again and again (the agent traces twice, retags and
traces, traces another theme over the same sessions). Their results are kept under a 128-bit
digest of every field those rules read (the user's text, the answer, the refined summary and
kinds), so a turn refined again, or a different turn, is a different key: nothing is invalidated
by hand and a kept result is the one the rule gives for those fields. `flag_turns` works turn by
turn, so running it over the turns not kept yet gives each the flag it gets among all of them.
Rules that read several turns at once (pairing, where the theme stands) are not kept.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from archive_mcp.themes.trace.decisions import Flag, flag_turns, gist
from archive_mcp.themes.trace.recent import Recent

FIELDS = ["user_text", "assistant_text", "summary", "kinds"]  # what flag_turns and gist read
MOST = 20_000  # turns kept at most (least recently used go first)
_NOT_KEPT = object()

Key = tuple[int, int]


class TurnMemo:
    """Flags and gists of turns, by a digest of the turn's fields (thread-safe, bounded)."""

    def __init__(self, most: int = MOST) -> None:
        self.turns: Recent[Key, dict[str, Any]] = Recent(most)

    @staticmethod
    def keys(frame: pl.DataFrame) -> list[Key]:
        """One key per row of `frame` (which holds `FIELDS`): two 64-bit hashes of the fields."""
        fields = pl.struct(FIELDS)
        h = frame.select(fields.hash(1).alias("a"), fields.hash(2).alias("b"))
        return list(zip(h["a"].to_list(), h["b"].to_list(), strict=True))

    def _entry(self, key: Key) -> dict[str, Any]:
        """The kept results of one turn (a new, empty entry when there are none)."""
        return self.turns.get(key) or self.turns.keep(key, {})

    def flags(self, frame: pl.DataFrame, keys: list[Key]) -> list[Flag | None]:
        """`flag_turns` of the frame's rows: the kept ones read back, the others run and kept."""
        got = [(self.turns.get(k) or {}).get("flag", _NOT_KEPT) for k in keys]
        todo = [i for i, f in enumerate(got) if f is _NOT_KEPT]
        if todo:
            rows = frame[todo] if len(todo) < frame.height else frame
            new = flag_turns(
                rows["user_text"].to_list(),
                rows["assistant_text"].to_list(),
                rows["kinds"].to_list(),
            )
            for i, f in zip(todo, new, strict=True):
                got[i] = self._entry(keys[i])["flag"] = f
        return got  # type: ignore[return-value]

    def gist(self, key: Key, row: dict[str, Any], by: str) -> str:
        """`gist(row, by)`, kept for the turn."""
        kept = (self.turns.get(key) or {}).get(by)
        if kept is None:
            kept = self._entry(key)[by] = gist(row, by)
        return kept


TURNS = TurnMemo()
