"""The raw copy: a source's whole lines appended to `raw/` by byte offset, private to the user.

Raw copies keep everything the agent logged, secrets included, so files are 0600 in 0700
folders. A source is compared with what was archived before new bytes are appended: the hash of
its first 4 KB and of the 4 KB just below the archived high-water mark must still match, and then
the archived bytes themselves, so an edit anywhere (also a same-size one) is reported instead of
splicing two histories into one copy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archive_mcp.errors import written
from archive_mcp.refiners.disk import SNAPSHOT_MAX, NotRegular, Refused, not_regular, open_regular
from archive_mcp.refiners.lines import complete_prefix
from archive_mcp.refiners.model import ParseResult, Problem
from archive_mcp.workspaces import atomic_file

HEAD = 4096
TAIL = 4096
CHUNK = 1 << 20
FILE_MODE = 0o600
DIR_MODE = 0o700
REWRITTEN = (
    "source was rewritten or truncated since it was archived; the archived copy is kept "
    "unchanged (to archive it afresh: `archive-mcp sessions purge` it, then `ingest "
    "--include-purged`)"
)
INCOMPLETE = (
    "last line is incomplete (the session is still being written); it is archived once it "
    "is complete"
)

Report = Callable[[str], None]  # a reason for skipping (part of) the source
Parse = Callable[[Path], ParseResult]  # a whole session file's reader


class NotWhole(Refused):
    """A whole-file source that does not parse as a document (an agent caught rewriting it)
    while its archived copy does: the archived copy is kept. Reported as the reader's problem
    that says so is (`malformed` or `truncated_tail`), at its line."""

    def __init__(self, path: Path | str, why: str, line: int) -> None:
        super().__init__(path, why)
        self.line = line


def private_dirs(path: Path, stop: Path) -> None:
    """Create `path`'s folders up to `stop` (exclusive of its parents) as 0700."""
    missing = []
    for d in (path, *path.parents):
        if d == stop.parent or d.exists():
            break
        missing.append(d)
    for d in reversed(missing):
        d.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(d, DIR_MODE)


def _sha1_range(fh: Any, start: int, end: int) -> str:
    fh.seek(start)
    return hashlib.sha1(fh.read(max(0, end - start))).hexdigest()


def _unchanged(fh: Any, entry: dict[str, Any], size: int, copy: Path) -> bool:
    """True when the bytes already archived still read the same: the head and the bytes just below
    the high-water mark by their hashes (cheap), then every byte against the archived copy, so an
    edit in the middle of a large source is caught too. That compare reads only sources that
    changed since the last ingest, once each."""
    archived = int(entry["archived"])
    if size < archived:
        return False
    if _sha1_range(fh, 0, int(entry.get("head_len", 0))) != entry.get("head"):
        return False
    tail_len = entry.get("tail_len")
    if tail_len is not None and _sha1_range(fh, archived - int(tail_len), archived) != entry.get(
        "tail"
    ):
        return False
    return _same_prefix(fh, copy, archived)


def _same_prefix(fh: Any, copy: Path, archived: int) -> bool:
    """Whether the source's first `archived` bytes equal the archived copy (True when the copy is
    gone or shorter, e.g. purged by hand: then the hashes above are all there is to go on)."""
    try:
        other = open(copy, "rb")
    except FileNotFoundError:
        return True
    with other:
        if os.fstat(other.fileno()).st_size < archived:
            return True
        fh.seek(0)
        left = archived
        while left:
            n = min(CHUNK, left)
            if fh.read(n) != other.read(n):
                return False
            left -= n
    return True


def archive_file(src: Path, dst: Path, raw_root: Path, entry: dict[str, Any], skip: Report) -> int:
    """Append the source's new whole lines to the archived copy; returns the bytes added.

    `entry` (the file's ingest state) is updated: size and mtime seen, head and tail hashes, the
    new high-water mark `archived`. OSError propagates; the copy is then left as it was.
    """
    why = not_regular(src)
    if why is not None:
        raise NotRegular(src, why)
    st = os.stat(src)
    if st.st_size == entry.get("size") and st.st_mtime_ns == entry.get("mtime_ns"):
        return 0
    archived = int(entry["archived"])
    if dst.exists() and dst.stat().st_size > archived:  # a crash after append, before state
        os.truncate(dst, archived)
    with open_regular(src) as fh:
        if archived and not _unchanged(fh, entry, st.st_size, dst):
            skip(REWRITTEN)
            entry["size"], entry["mtime_ns"] = st.st_size, st.st_mtime_ns
            return 0
        end = complete_prefix(src, archived, st.st_size)
        if end > archived:
            _append(fh, src, dst, raw_root, archived, end)
            if archived < HEAD:
                entry["head_len"] = min(HEAD, end)
                entry["head"] = _sha1_range(fh, 0, entry["head_len"])
            entry["tail_len"] = min(TAIL, end)
            entry["tail"] = _sha1_range(fh, end - entry["tail_len"], end)
    entry["size"], entry["mtime_ns"] = st.st_size, st.st_mtime_ns
    if end < st.st_size:
        skip(INCOMPLETE)
    entry["archived"] = end
    return end - archived


def _append(fh: Any, src: Path, dst: Path, raw_root: Path, archived: int, end: int) -> None:
    private_dirs(dst.parent, raw_root)
    fh.seek(archived)
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        with written(dst), os.fdopen(fd, "ab") as out:  # a failed write() names the copy
            os.fchmod(out.fileno(), FILE_MODE)
            left = end - archived
            while left:
                chunk = fh.read(min(CHUNK, left))
                if not chunk:
                    raise OSError(f"{src} shrank while it was being archived")
                out.write(chunk)
                left -= len(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        if dst.exists():
            os.truncate(dst, archived)
        raise


def snapshot_file(
    src: Path, dst: Path, raw_root: Path, durable: bool = True, parse: Parse | None = None
) -> bool:
    """Whole-file copies (state.json, meta.json, offloaded tool outputs, Gemini's rewritten JSON
    chats), rewritten atomically when changed, 0600; True when the copy changed. The copy streams
    in chunks (memory stays bounded), keeps holes as holes (a sparse source stays sparse), and a
    source over SNAPSHOT_MAX is refused. `durable=False` skips the fsync (the source is still
    there: a lost copy is made again on the next run).

    With `parse` (the reader of a session rewritten whole), a new copy that does not parse as a
    document while the archived one does never replaces it (`NotWhole`): the agent was caught
    halfway through rewriting the file, and its next version is read at the next run."""
    with open_regular(src) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > SNAPSHOT_MAX:
            raise Refused(src, f"larger than {SNAPSHOT_MAX >> 20} MB; not copied")
        if _same_file(fh, dst, size):
            return False
        private_dirs(dst.parent, raw_root)
        fh.seek(0)
        if parse is not None and dst.exists():
            _replace_whole(fh, src, dst, size, durable, parse)
            return True
        with atomic_file(dst, durable, FILE_MODE) as out:
            _copy_sparse(fh, out, size)
    return True


def _replace_whole(fh: Any, src: Path, dst: Path, size: int, durable: bool, parse: Parse) -> None:
    """Copy the open source over `dst` unless the copy does not parse as a document and `dst`
    does. The copy is parsed under `dst`'s own name (readers tell formats apart by name and
    suffix) in a private temp folder beside it (`clean_orphans` removes one a kill left), and
    renamed into place only after: readers of `dst` never see a broken copy."""
    folder = Path(tempfile.mkdtemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".tmp"))
    try:
        staged = folder / dst.name
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with written(dst), os.fdopen(fd, "wb") as out:  # a failed write() names the copy
            _copy_sparse(fh, out, size)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        why = _not_whole(parse(staged))
        if why is not None and _not_whole(parse(dst)) is None:
            when = datetime.fromtimestamp(dst.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M:%S")
            raise NotWhole(
                src,
                f"{why.kind}: {why.error}; not a whole document (being written?): the copy "
                f"archived {when} UTC is kept, and the file is read again at the next ingest",
                why.line,
            )
        os.replace(staged, dst)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _not_whole(result: ParseResult) -> Problem | None:
    """Why a whole file did not parse as a document, when it gave no turn: its first problem
    that is `malformed` or a `truncated_tail` (a JSONL file, such as a VS Code change log, caught
    while its first lines are written); None when it did. A document with fewer turns, or none,
    parsed: it is taken."""
    if result.turns:
        return None
    return next((p for p in result.problems if p.kind in ("malformed", "truncated_tail")), None)


def _same_file(fh: Any, dst: Path, size: int) -> bool:
    """Whether `dst` holds the same bytes as the open source, compared chunk by chunk."""
    try:
        other = open(dst, "rb")
    except FileNotFoundError:
        return False
    with other:
        if os.fstat(other.fileno()).st_size != size:
            return False
        fh.seek(0)
        while chunk := fh.read(CHUNK):
            if other.read(len(chunk)) != chunk:
                return False
    return True


def _copy_sparse(fh: Any, out: Any, size: int) -> None:
    """Copy `size` bytes; a chunk of zeros becomes a hole (seek) rather than written bytes."""
    zero = bytes(CHUNK)
    left = size
    while left > 0:
        chunk = fh.read(min(CHUNK, left))
        if not chunk:
            break  # the source shrank: the copy is what there was
        if chunk == zero[: len(chunk)]:
            out.seek(len(chunk), 1)
        else:
            out.write(chunk)
        left -= len(chunk)
    out.truncate(out.tell())  # a trailing hole still counts in the size
