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
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .disk import is_dir, is_file, load_object
from .sources import READERS, Discovery, listing
from .stores import read_only

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


def prefixed(con: sqlite3.Connection, table: str, prefix: str) -> list[tuple[str, Any]]:
    """The (key, value) rows of the key-value `table` whose key starts with `prefix`, by key
    range (the key's index; LIKE scans all)."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return list(
        con.execute(f"SELECT key, value FROM {table} WHERE key >= ? AND key < ?", (prefix, end))
    )


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
