"""Excluded paths: sessions whose work dir is under one of them are never archived.

A pattern is a project path (`~/code/client-secret`: that folder and everything under it) or a glob
(`~/code/client-secret-*`, `*/secret/*`: `*`, `?` and `[...]` as in `fnmatch`, matched against the
session's canonical work dir and each folder above it). A session whose work dir is unknown is
not excluded (there is nothing to match)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from fnmatch import fnmatchcase

from archive_mcp.workspaces import canonical_path

GLOB = frozenset("*?[")


class Excluder:
    def __init__(self, patterns: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.patterns = [str(p).strip() for p in patterns if str(p).strip()]
        self._rules: list[tuple[str, bool, str]] = []  # (pattern as given, is a glob, to match)
        for p in self.patterns:
            text = os.path.expanduser(p)
            if GLOB & set(text):
                self._rules.append(
                    (p, True, text if text.startswith("*") else canonical_path(text))
                )
            else:
                self._rules.append((p, False, canonical_path(text).rstrip("/") + "/"))

    def __bool__(self) -> bool:
        return bool(self._rules)

    def match(self, work_dir: str | None) -> str | None:
        """The pattern that excludes `work_dir` (None when none does or it is unknown)."""
        if not work_dir or not self._rules:
            return None
        wd = canonical_path(work_dir)
        folders = _self_and_parents(wd)
        for pattern, is_glob, rule in self._rules:
            if is_glob:
                if any(fnmatchcase(f, rule) for f in folders):
                    return pattern
            elif (wd.rstrip("/") + "/").startswith(rule):
                return pattern
        return None


def _self_and_parents(path: str) -> list[str]:
    out = [path]
    while (up := posixpath.dirname(path)) != path:
        out.append(up)
        path = up
    return out
