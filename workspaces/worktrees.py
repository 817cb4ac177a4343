"""Spot a work dir that is a git worktree or a branch checkout of a repo already archived.

Agents record the folder they ran in, and a worktree (`<repo>/.worktrees/<name>`,
`~/.claude-worktrees/<repo>/<name>`) or a branch checkout beside its siblings
(`<product>/feat-x` next to `<product>/feat-y`) gets a workspace of its own. `ingest` suggests
merging its workspace into the repo's (`archive-mcp workspaces merge SRC --into WS`); it never
merges on its own, because only the user knows whether the two are one project.
"""

from __future__ import annotations

import ntpath
import re
from collections.abc import Iterable

WORKTREE_DIRS = (".worktrees", "worktrees", ".git-worktrees")
_BRANCH_NAME = re.compile(r"^(feat|feature|fix|bugfix|hotfix|release|chore|exp)[-_/]", re.I)


def _parts(path: str) -> tuple[list[str], str]:
    """Path components and the separator the path uses (Windows paths keep theirs)."""
    sep = "\\" if ntpath.splitdrive(path)[0] or ("\\" in path and "/" not in path) else "/"
    return [p for p in path.split(sep)], sep


def worktree_home(path: str, known: Iterable[str]) -> str | None:
    """The archived path `path` is most likely a worktree or branch checkout of, or None."""
    parts, sep = _parts(path)
    known = sorted(
        (k for k in known if k != path), key=lambda k: _parts(k)[1] != sep
    )  # same OS first
    for i, part in enumerate(parts[:-1]):
        if part == ".claude-worktrees":  # ~/.claude-worktrees/<repo name>/<worktree>
            name = parts[i + 1] if i + 2 < len(parts) else ""
            return next((k for k in known if name and _base(k) == name), None)
        if part in WORKTREE_DIRS:  # <repo>/.worktrees/<worktree>
            repo_dir = sep.join(parts[:i])
            return next((k for k in known if k == repo_dir), None)
    name = parts[-1]
    if _BRANCH_NAME.match(name):
        parent = sep.join(parts[:-1])
        siblings = sorted(k for k in known if sep.join(_parts(k)[0][:-1]) == parent)
        plain = [k for k in siblings if not _BRANCH_NAME.match(_base(k))]
        return (plain or siblings)[0] if siblings else None
    return None


def _base(path: str) -> str:
    return _parts(path)[0][-1] if path else ""
