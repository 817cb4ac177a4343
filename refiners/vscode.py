"""The storage VS Code and the editors built on it share (VS Code, its Insiders build, VSCodium,
Cursor), which their agents' readers read: Copilot Chat (`vscode_chat.py`), Cursor's composer
(`cursor.py`) and the extensions keeping Cline's format (`cline.py`).

An editor keeps its state in its `User` folder:

* `workspaceStorage/<hash>/` one folder per window's workspace: `workspace.json` names it (a
  folder URI in `folder`, or a `.code-workspace` file's in `workspace`), `state.vscdb` holds its
  state, and an agent's own folders sit beside them (`chatSessions/`);
* `globalStorage/` the editor's state across workspaces (`state.vscdb`) and one folder an
  extension (`saoudrizwan.claude-dev`, by its publisher and name): those of `EXTENSIONS` are
  read by the readers registered for them.

A `state.vscdb` is SQLite: a key-value table `ItemTable (key, value)` (Cursor adds
`cursorDiskKV`), each value JSON text. It is read as the agents' stores are (`stores.read_only`).

A chat session (`chatSessions/`, the editor's own chat storage) is a `.json` document rewritten
whole or, in newer builds, a `.jsonl` log of changes to that document (`replay`; the change
kinds: docs/formats.md, "VS Code's chat"), whose last line, while the editor writes it, is left
for the next read (`truncated_tail`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .disk import LINE_MAX, is_dir, is_file, load_object
from .fields import field_list, json_value, loads_valid
from .model import Problem
from .sources import READERS, Discovery, listing
from .stores import read_only, read_reported

STATE_DB = "state.vscdb"
# the extensions whose sessions are archived, by their globalStorage folder: the source each is
# archived as (its reader is registered under it; these three keep Cline's format)
EXTENSIONS = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo-code",
    "kilocode.kilo-code": "kilo-code",
}


def folder_path(uri: Any) -> str | None:
    """The local path of a workspace folder URI (`file:///home/a/p`, `file:///c%3A/p`,
    `vscode-remote://wsl%2Bubuntu/home/a/p`), None when there is none."""
    if not isinstance(uri, str) or "://" not in uri:
        return None
    path = unquote(urlsplit(uri).path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /c:/Users/a: a Windows drive
        path = path[1:]
    return path or None


def workspace_folder(storage: Path) -> str | None:
    """The folder a `workspaceStorage/<hash>` folder belongs to (`workspace.json`), or None."""
    data = load_object(storage / "workspace.json")
    path = folder_path(data.get("folder"))
    if path is None and (ws := folder_path(data.get("workspace"))) is not None:
        path = ws.rsplit("/", 1)[0]  # a .code-workspace file: its folder
    return path


def workspace_states(user: Path, found: Discovery) -> list[tuple[Path, str]]:
    """(the `state.vscdb`, the folder) of each `workspaceStorage/<hash>` of the `User` folder
    `user` that names its folder and has a store."""
    out = []
    for storage in listing(user / "workspaceStorage", found):
        folder = workspace_folder(storage)
        if folder is not None and is_file(storage / STATE_DB):
            out.append((storage / STATE_DB, folder))
    return out


def user_folder(path: Path) -> Path | None:
    """The `User` folder `path` is, or whose `globalStorage` (or its `state.vscdb`) it is; None
    when `path` is none of them."""
    for user in (path, path.parent, path.parent.parent):
        state = user / "globalStorage" / STATE_DB
        if is_file(state) and (is_dir(path) or path == state):
            return user
    return None


def item(db: Path, key: str) -> Any:
    """The value of `key` in the `ItemTable` of the store `db` as stored (None without one)."""
    with read_only(db) as con:
        row = con.execute("SELECT value FROM ItemTable WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def workspace_items(
    user: Path, key: str, what: str, found: Discovery
) -> Iterator[tuple[Path, str, Any]]:
    """(the store, its folder, the value of `key` in its `ItemTable` as stored) for each store
    `workspace_states` lists; None for the value when the store has none or cannot be read (that
    one reported in `found` as `what`: "could not read <what>: …")."""
    for db, folder in workspace_states(user, found):
        yield db, folder, read_reported(partial(item, key=key), db, what, found)


def prefixed(con: sqlite3.Connection, table: str, prefix: str) -> dict[str, Any]:
    """The values of the key-value `table` whose key starts with `prefix`, each its JSON
    (`json_value`: None when it is not JSON), by the rest of its key; read by key range (the
    key's index; LIKE scans all)."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    rows = con.execute(f"SELECT key, value FROM {table} WHERE key >= ? AND key < ?", (prefix, end))
    return {key[len(prefix) :]: json_value(value) for key, value in rows}


def extension_of(path: Path) -> str | None:
    """The source of the extension (`EXTENSIONS`) whose globalStorage folder holds `path`, None
    when none does."""
    for part in (path, *path.parents):
        if part.name.lower() in EXTENSIONS:
            return EXTENSIONS[part.name.lower()]
    return None


def extension_sessions(user: Path, found: Discovery) -> None:
    """The sessions in the globalStorage of the `User` folder `user` of each extension in
    `EXTENSIONS`, found by the reader registered for it, added to `found`: a `User` folder is read
    whole, once (its extensions' folders are no roots of their own)."""
    for folder, source in EXTENSIONS.items():
        found.add(READERS[source].discover(user / "globalStorage" / folder))


# --- a chat session's change log ---------------------------------------------------------------


def _at(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
        return node[key]
    return None


def apply(doc: Any, op: dict[str, Any]) -> Any:
    """`doc` with one change of the log applied (raises ValueError on one that does not fit)."""
    kind, path = op.get("kind"), op.get("k")
    if kind == 0:
        return op.get("v")
    if not isinstance(path, list) or not path:
        raise ValueError(f"change of kind {kind!r} without a path")
    parent = doc
    for key in path[:-1]:
        parent = _at(parent, key)
    last = path[-1]
    if kind == 2:
        target = _at(parent, last)
        if not isinstance(target, list):
            raise ValueError(f"push onto {path} that is not an array")
        if isinstance(op.get("i"), int):
            del target[op["i"] :]
        target.extend(field_list(op, "v"))
    elif kind == 1 and isinstance(parent, dict):
        parent[last] = op.get("v")
    elif kind == 1 and isinstance(parent, list) and _at(parent, last) is not None:
        parent[last] = op.get("v")
    elif kind == 3 and isinstance(parent, dict | list) and _at(parent, last) is not None:
        del parent[last]
    else:
        raise ValueError(f"change of kind {kind!r} at {path} that does not fit the session")
    return doc


def replay(raw: bytes, problems: list[Problem]) -> tuple[Any, int]:
    """The session a `.jsonl` change log ends with, and how many of its bytes were replayed; a
    bad line is reported and skipped.

    A last line with no newline that does not decode is the editor's change still being written:
    it is reported as `truncated_tail` (as `lines.LineReader` reports a JSONL log's) and not
    replayed (the bytes replayed stop before it), so a read once the line is whole replays it. A
    line that does not decode followed by a newline, or a change that does not fit, is
    `malformed`.
    """
    doc: Any = None
    lines = raw.split(b"\n")
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        last = no == len(lines)  # no newline after it: the editor may be writing it
        try:
            if len(line) > LINE_MAX:  # not decoded: it would be refused whatever it holds
                raise ValueError(
                    f"unfinished line over {LINE_MAX:,} bytes" if last else "not a change record"
                )
            op = loads_valid(line.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError) as exc:
            tail = last and isinstance(exc, ValueError)
            problems.append(Problem(no, "truncated_tail" if tail else "malformed", str(exc)[:200]))
            if tail:
                return doc, len(raw) - len(line)
            continue
        try:
            if not isinstance(op, dict):
                raise ValueError("not a change record")
            doc = apply(doc, op)
        except (ValueError, RecursionError, TypeError, IndexError) as exc:
            problems.append(Problem(no, "malformed", str(exc)[:200]))
    return doc, len(raw)
