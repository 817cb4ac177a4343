"""Turn references as the faces print them and as people and agents type them back.

One citation form: `SESSION:TURN` (with ` [agent]` for a subagent's turn), where SESSION may be
a unique prefix of the session id (also the `5dd5f56a-…` a narrow table prints), or an object
`{session_id, turn, agent?}`, or the web UI's permalink of a turn (`http://…/turn/SESSION:TURN`). `parse_ref` reads any of them; `resolve_session` finds the one
session a prefix names among those given."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from os.path import commonprefix
from typing import Any
from urllib.parse import unquote

from archive_mcp.errors import InvalidArgument


@dataclass
class TurnRef:
    session_id: str
    turn: int
    agent: str = "main"
    last: int | None = None  # a range: turns `turn` to `last` (`SESSION:11-31`)


# the web UI's permalink: its path after /turn/ is the reference, percent-encoded
PERMALINK = re.compile(r"^\s*https?://[^/\s]+/turn/(?P<ref>[^?#\s]+)(?:[?#]\S*)?\s*$")
REF = re.compile(
    r"^\s*(?P<sid>\S.*?):(?P<turn>\d+)(?:\s*-\s*(?P<last>\d+))?(?:\s*\[(?P<agent>[^\]]+)\])?\s*$"
)
FORM = (
    "SESSION:TURN (a unique session-id prefix will do, e.g. 3f2c9a1e:2), SESSION:FIRST-LAST "
    "for a range (3f2c9a1e:11-31), SESSION:TURN [AGENT] for a subagent's turn as the tools "
    "print it (3f2c9a1e:0 [agent-a87]) or {session_id, turn, agent?}"
)

RefLike = TurnRef | dict[str, Any] | str


def parse_ref(r: RefLike) -> TurnRef:
    """A TurnRef from a `session:turn` string, a `{session_id, turn, agent?}` object or a TurnRef."""
    if isinstance(r, TurnRef):
        return r
    if isinstance(r, str):
        link = PERMALINK.match(r)
        if link:
            r = unquote(link["ref"])
        m = REF.match(r)
        if not m:
            raise InvalidArgument(f"a turn reference looks like {FORM}; got {r!r}")
        sid = m["sid"]
        if "…" in sid:  # a clipped id as a narrow table prints it: its head is a prefix
            sid = sid.split("…")[0].rstrip("-")
        turn, last = int(m["turn"]), int(m["last"]) if m["last"] else None
        if last is not None and last < turn:
            raise InvalidArgument(f"a range of turns runs from the first to the last; got {r!r}")
        return TurnRef(sid, turn, m["agent"] or "main", last)
    if isinstance(r, dict):
        try:
            last = r.get("last")
            return TurnRef(
                str(r["session_id"]),
                int(r["turn"]),
                str(r.get("agent") or "main"),
                int(last) if last is not None else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument(f"a turn reference looks like {FORM}; got {r!r}") from exc
    raise InvalidArgument(f"a turn reference looks like {FORM}; got {r!r}")


def resolve_session(known: Iterable[str], sid: str) -> list[str]:
    """The sessions `sid` names: itself when known, else every known id it is a prefix of."""
    ids = list(known)
    if sid in ids:
        return [sid]
    return sorted(k for k in ids if sid and k.startswith(sid))


def turn_ref(session_id: str, turn: int, agent: str = "main") -> str:
    """A turn as every face prints it: `SESSION:TURN`, with ` [AGENT]` for a subagent's."""
    return f"{session_id}:{turn}{'' if agent == 'main' else f' [{agent}]'}"


SHORT = 8  # the fewest characters of a session id the faces print for an agent


def short_ids(ids: Iterable[str], least: int = SHORT) -> dict[str, str]:
    """Each id's shortest prefix that names it alone among `ids` (at least `least` characters,
    the whole id where it is shorter or another id starts with it): what `resolve_session` reads
    back as that one session."""
    ordered = sorted(set(ids))
    out = {}
    for i, sid in enumerate(ordered):
        near = ordered[max(0, i - 1) : i] + ordered[i + 1 : i + 2]
        need = max([least, *(len(commonprefix([sid, n])) + 1 for n in near)])
        out[sid] = sid[:need]
    return out


@dataclass
class Citing:
    """How an agent's text names sessions: by their shortest unique prefix (`short_ids` over
    the sessions a reference is resolved among), with the agent that wrote them (`source`) only
    where those sessions come from more than one."""

    short: dict[str, str] = field(default_factory=dict)
    sources: bool = False  # more than one agent wrote the sessions: name each hit's

    def sid(self, session_id: str) -> str:
        return self.short.get(session_id, session_id)

    def ref(self, session_id: str, turn: int, agent: str = "main") -> str:
        return turn_ref(self.sid(session_id), turn, agent)

    def in_text(self, text: str) -> str:
        """`text` with each whole session id it names (a word of id characters, e.g. before
        `:TURN`) named as `sid` names it."""
        if not self.short:
            return text
        return _ID_WORD.sub(lambda m: self.short.get(m.group(), m.group()), text)


# a word that may be a session id (uuids, rollout names), not a folder of a path (`…/ID/sub`)
_ID_WORD = re.compile(r"(?<![\w./\\-])[\w.-]{9,}(?![\w./\\-])")
