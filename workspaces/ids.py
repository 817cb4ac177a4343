"""Workspace identity: the md5 of the canonical work-dir path, exactly Kimi's Python rule."""

from __future__ import annotations

import hashlib
import ntpath
import os
import posixpath
import re

_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


_WINDOWS_ABS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def canonical_path(path: str, cwd: str | None = None) -> str:
    """Absolute + normpath, no symlink resolution (Kimi's `KaosPath.canonical()`).

    A Windows path recorded by an agent on Windows (`C:\\Users\\a`) is already absolute: it is
    normalised the Windows way, never joined to this machine's cwd.
    """
    if _WINDOWS_ABS.match(path):
        return ntpath.normpath(path)
    if not posixpath.isabs(path):
        path = posixpath.join(cwd or os.getcwd(), path)
    return posixpath.normpath(path)


def workspace_id(path: str, cwd: str | None = None) -> str:
    """md5 hex of the canonical absolute path: the same key Kimi's Python CLI buckets by."""
    return hashlib.md5(canonical_path(path, cwd).encode("utf-8")).hexdigest()


def is_workspace_id(text: str) -> bool:
    return bool(_HEX32.match(text))


def kimi_code_key(work_dir: str) -> str:
    """The TypeScript Kimi Code session-bucket name for a work dir (`wd_<slug>_<sha256[:12]>`)."""
    normalized = work_dir.replace("\\", "/").rstrip("/")
    base = normalized.split("/")[-1]
    slug = re.sub(r"[^a-z0-9._-]+", "-", base.lower()).strip("-")[:40].strip("-")
    if slug in ("", ".", ".."):
        slug = "workspace"
    return f"wd_{slug}_{hashlib.sha256(normalized.encode('utf-8')).hexdigest()[:12]}"


def safe_id(name: str) -> str:
    """`name` when it is a safe folder name (letters, digits, `_.-`), else a stable id derived
    from it (`b_` + md5 prefix): a bucket named `my bucket` still gets a workspace."""
    if _SAFE.match(name) and name.strip(".") != "":
        return name
    return "b_" + hashlib.md5(name.encode("utf-8", "surrogatepass")).hexdigest()[:24]
