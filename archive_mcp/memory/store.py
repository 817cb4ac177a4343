"""Workspace memory: Markdown files with YAML front matter under `memory/<folder>/<key>.md`.

Every write happens under the workspace lock and lands by atomic rename; an update keeps the
previous version in `memory/.history/`, and `forget` moves the file to `memory/.trash/`.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import frontmatter
import numpy as np
import yaml

from archive_mcp.errors import ArchiveError
from archive_mcp.refiners.redact import redact, secret_values
from archive_mcp.refiners.text import tokens
from archive_mcp.search.lexical import Postings, bm25
from archive_mcp.workspaces import Workspace, atomic_write_text, locked
from archive_mcp.workspaces.clock import file_stamp, now

FOLDERS = ("decisions", "rules", "knowledge", "lessons", "reference")
KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$")
MAX_CONTENT = 256 * 1024
MAX_TITLE = 200
MAX_TAGS, MAX_TAG = 32, 64
MAX_SOURCES, MAX_SOURCE = 32, 500
MAX_FILE = 2 * MAX_CONTENT  # a memory file larger than this (written by hand) is read cut short


class MemoryStoreError(ArchiveError):
    """A memory call the caller can fix; the message says how."""


def check_key(key: str) -> str:
    if not isinstance(key, str) or not KEY.match(key) or ".." in key:
        raise MemoryStoreError(
            f"invalid memory key {key!r}: use letters, digits, '.', '_' and '-' "
            "(no slashes, no '..'), starting with a letter or digit"
        )
    return key


def check_folder(folder: str) -> str:
    if folder not in FOLDERS:
        raise MemoryStoreError(f"unknown memory folder {folder!r}; use one of {', '.join(FOLDERS)}")
    return folder


def slugify(text: str, limit: int = 60) -> str:
    """A key from free text (for save_lesson); ASCII words joined by '-', else a hash-like stamp."""
    words = re.findall(r"[A-Za-z0-9]+", text.lower())
    slug = "-".join(words)[:limit].strip("-")
    return slug or "note-" + file_stamp("%Y%m%d-%H%M%S")


@dataclass
class MemoryEntry:
    folder: str
    key: str
    title: str
    content: str
    tags: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    versions: int = 1
    warnings: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"memory/{self.folder}/{self.key}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ref": self.ref}


@dataclass
class MemoryHit:
    folder: str
    key: str
    title: str
    score: float
    snippet: str
    tags: list[str]
    updated: str
    matched: list[str]


@dataclass
class ForgetReport:
    removed: str
    trash_path: str
    title: str


def render(entry: MemoryEntry) -> str:
    meta = {
        "title": entry.title,
        "tags": entry.tags,
        "created": entry.created,
        "updated": entry.updated,
        "sources": entry.sources,
        "supersedes": entry.supersedes,
    }
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).strip()
    return f"---\n{front}\n---\n\n{entry.content.rstrip()}\n"


def parse(folder: str, key: str, text: str) -> MemoryEntry:
    """A memory file: YAML front matter (LF or CRLF line endings) and a Markdown body."""
    try:
        post = frontmatter.loads(text)
        meta, body = dict(post.metadata), post.content
    except Exception:  # noqa: BLE001 - a broken header: the whole file is the body
        meta, body = {}, text

    def as_list(v: Any) -> list[str]:
        return [str(x) for x in v] if isinstance(v, list) else ([str(v)] if v else [])

    return MemoryEntry(
        folder,
        key,
        str(meta.get("title") or key),
        body.rstrip("\n"),
        as_list(meta.get("tags")),
        as_list(meta.get("sources")),
        as_list(meta.get("supersedes")),
        str(meta.get("created") or ""),
        str(meta.get("updated") or ""),
    )


def check_fields(title: Any, tags: Any, sources: Any) -> tuple[str | None, list[str], list[str]]:
    """Title, tags and sources within bounds (types and sizes), or a MemoryStoreError saying which."""
    if title is not None and not isinstance(title, str):
        raise MemoryStoreError("title must be a string")
    if title is not None and len(title) > MAX_TITLE:
        raise MemoryStoreError(
            f"title is {len(title):,} characters; at most {MAX_TITLE} (put the rest in the content)"
        )
    out = []
    for name, values, most, longest in (
        ("tags", tags, MAX_TAGS, MAX_TAG),
        ("sources", sources, MAX_SOURCES, MAX_SOURCE),
    ):
        values = [] if values is None else values
        if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
            raise MemoryStoreError(f"{name} must be a list of strings")
        if len(values) > most:
            raise MemoryStoreError(f"{len(values):,} {name}; a memory takes at most {most}")
        long = next((v for v in values if len(v) > longest), None)
        if long is not None:
            raise MemoryStoreError(
                f"one of the {name} is {len(long):,} characters; at most {longest} each"
            )
        out.append(list(values))
    return title, out[0], out[1]


class MemoryStore:
    """The memory of one workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.root = ws.root / "memory"

    def _path(self, folder: str, key: str) -> Path:
        path = self.root / check_folder(folder) / f"{check_key(key)}.md"
        if not path.resolve().is_relative_to(self.root.resolve()):
            raise MemoryStoreError(f"memory key {key!r} would leave its folder")
        return path

    def _history(self, folder: str, key: str) -> Path:
        return self.root / ".history" / folder / key

    def _read(self, path: Path, folder: str, key: str) -> MemoryEntry:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE + 1)
        cut = len(raw) > MAX_FILE
        text = raw[:MAX_FILE].decode("utf-8", errors="replace")
        entry = parse(folder, key, text)
        if cut:
            entry.warnings.append(
                f"the file is larger than {MAX_FILE:,} bytes; only its start was read"
            )
        hist = self._history(folder, key)
        entry.versions = 1 + (len(list(hist.glob("*.md"))) if hist.is_dir() else 0)
        if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
            entry.warnings.append("the file held bytes that are not UTF-8; they read as U+FFFD")
        return entry

    # --- calls -----------------------------------------------------------------------------
    def remember(
        self,
        key: str,
        content: str,
        folder: str = "knowledge",
        tags: list[str] | None = None,
        sources: list[str] | None = None,
        title: str | None = None,
        supersedes: list[str] | None = None,
    ) -> MemoryEntry:
        """Create or update a memory; an update keeps the previous version in the history."""
        path = self._path(folder, key)
        warnings: list[str] = []
        clean = content.encode("utf-8", errors="replace").decode("utf-8")
        if clean != content:
            warnings.append("content held characters that are not valid UTF-8; they were replaced")
        size = len(clean.encode("utf-8"))
        if size > MAX_CONTENT:
            raise MemoryStoreError(
                f"content is {size:,} bytes; a memory holds at most {MAX_CONTENT:,}. "
                "Keep the memory short and cite the long material in `sources`."
            )
        if not clean.strip():
            raise MemoryStoreError("content is empty: say what to remember")
        keep_tags, keep_sources = tags is None, sources is None  # an update keeps what it omits
        title, checked_tags, checked_sources = check_fields(title, tags, sources)
        known = secret_values([clean, title or "", *checked_tags, *checked_sources])
        clean, n = redact(clean, known)
        if title:
            title, n_title = redact(title, known)
            n += n_title
        redacted = [redact(t, known) for t in checked_tags + checked_sources]
        n += sum(c for _, c in redacted)
        split = len(checked_tags)
        tags = None if keep_tags else [t for t, _ in redacted[:split]]
        sources = None if keep_sources else [t for t, _ in redacted[split:]]
        if n:
            warnings.append(f"{n} secret(s) were redacted before storing")
        for s in supersedes or []:
            if not re.match(r"^memory/[a-z]+/[A-Za-z0-9._-]+$", s):
                raise MemoryStoreError(
                    f"supersedes entry {s!r} must look like memory/<folder>/<key>"
                )
        with locked(self.ws.root):
            stamp = now("microseconds")
            created = stamp
            if path.exists():
                old = path.read_text(encoding="utf-8", errors="replace")
                previous = parse(folder, key, old)
                created = previous.created or stamp
                # An update that does not mention tags, sources or supersedes keeps them.
                tags = previous.tags if tags is None else tags
                sources = previous.sources if sources is None else sources
                supersedes = previous.supersedes if supersedes is None else supersedes
                hist = self._history(folder, key)
                atomic_write_text(hist / f"{file_stamp()}.md", old)
            entry = MemoryEntry(
                folder,
                key,
                title or _title(key, clean),
                clean.rstrip("\n"),
                sorted(set(tags or [])),
                list(dict.fromkeys(sources or [])),
                list(dict.fromkeys(supersedes or [])),
                created,
                stamp,
            )
            atomic_write_text(path, render(entry))
        stored = self._read(path, folder, key)
        stored.warnings = warnings
        return stored

    def recall(self, key: str, folder: str | None = None) -> MemoryEntry:
        check_key(key)
        folders = [check_folder(folder)] if folder else list(FOLDERS)
        found = [(f, self._path(f, key)) for f in folders if self._path(f, key).exists()]
        if not found:
            near = [f"{e.folder}/{e.key}" for e in self.list() if key.lower() in e.key.lower()][:5]
            hint = (
                f" Did you mean: {', '.join(near)}?" if near else " List the memories to see them."
            )
            raise MemoryStoreError(f"no memory {key!r}{f' in {folder}' if folder else ''}.{hint}")
        if len(found) > 1:
            raise MemoryStoreError(
                f"{key!r} exists in {', '.join(f for f, _ in found)}: pass `folder`"
            )
        f, path = found[0]
        return self._read(path, f, key)

    def list(self, folder: str | None = None) -> list[MemoryEntry]:
        folders = [check_folder(folder)] if folder else list(FOLDERS)
        out = []
        for f in folders:
            d = self.root / f
            if d.is_dir():
                out += [
                    self._read(p, f, p.stem) for p in sorted(d.glob("*.md")) if KEY.match(p.stem)
                ]
        return out

    def recall_recent(self, limit: int = 10) -> builtins.list[MemoryEntry]:
        return sorted(self.list(), key=lambda e: e.updated, reverse=True)[:limit]

    def forget(self, key: str, folder: str) -> ForgetReport:
        """Move exactly `folder/key` to the trash; an unknown key is an error, never a success."""
        path = self._path(folder, key)
        with locked(self.ws.root):
            if not path.exists():
                raise MemoryStoreError(f"nothing removed: there is no memory {folder}/{key}")
            entry = self._read(path, folder, key)
            trash = self.root / ".trash" / folder / f"{key}.{file_stamp()}.md"
            trash.parent.mkdir(parents=True, exist_ok=True)
            path.rename(trash)
        return ForgetReport(
            f"memory/{folder}/{key}", str(trash.relative_to(self.ws.root)), entry.title
        )

    def search(
        self, query: str, folder: str | None = None, limit: int = 10
    ) -> builtins.list[MemoryHit]:
        """Lexical + fuzzy ranking (the search_context machinery), CJK-aware."""
        from archive_mcp.search.ranking import (
            normalised as _normalised,  # each signal scaled to [0, 1]
        )

        if not query.strip():
            raise MemoryStoreError("the query is empty")
        entries = self.list(folder)
        if not entries:
            return []
        docs = [
            tokens(f"{e.title}\n{' '.join(e.tags)}\n{e.key.replace('-', ' ')}\n{e.content}")
            for e in entries
        ]
        postings = Postings.build(docs)
        q = list(dict.fromkeys(tokens(query)))
        alive = [np.ones(len(entries), bool)]
        lex = bm25([postings], [(t, 1.0) for t in q], alive)[0]
        fuzzy_terms = dict.fromkeys(q, 1.0)
        for t in q[:8]:
            for term, score in postings.similar_terms(t):
                fuzzy_terms[term] = max(fuzzy_terms.get(term, 0.0), (score / 100) ** 2)
        fz = bm25([postings], list(fuzzy_terms.items()), alive)[0]
        ok = alive[0]
        total = _normalised("lexical", lex, ok, 100) + _normalised("fuzzy", fz, ok, 100)
        order = [int(i) for i in np.argsort(-total, kind="stable") if total[i] > 0][:limit]
        hits = []
        for i in order:
            e = entries[i]
            matched = [n for n, v in (("lexical", lex), ("fuzzy", fz)) if v[i] > 0]
            hits.append(
                MemoryHit(
                    e.folder,
                    e.key,
                    e.title,
                    round(float(total[i]), 6),
                    _snippet(e.content, set(q) | set(fuzzy_terms)),
                    e.tags,
                    e.updated,
                    matched,
                )
            )
        return hits


def _title(key: str, content: str) -> str:
    first = content.strip().splitlines()[0].lstrip("# ").strip() if content.strip() else ""
    return first[:80] if first else key.replace("-", " ")


def _snippet(content: str, terms: set[str], width: int = 200) -> str:
    lines = [ln.strip() for ln in content.splitlines() if ln.strip()]
    if not lines:
        return ""
    best = max(lines, key=lambda ln: len(set(tokens(ln)) & terms))
    return best if len(best) <= width else best[: width - 1] + "…"
