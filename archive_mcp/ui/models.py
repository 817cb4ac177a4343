"""Which model answered a session, read from its archived raw log.

The refined turns keep tokens but not the model; the raw logs name it (`"model": "..."` in
Claude Code, Codex, Gemini and Qwen records). A session's tokens are priced at the model its log
names most. Reading every log takes a while on a large archive, so `ModelScan` reads them on a
background thread, remembers each file by size and mtime (a log that grows is read again), and
the usage page shows what is known so far and how many logs are still unread."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

MODEL = re.compile(rb'"model"\s*:\s*"([A-Za-z0-9][A-Za-z0-9._:/@-]{1,79})"')
NOT_A_MODEL = {b"<synthetic>"}
KEY = b'"model"'


def log_model(path: Path) -> str | None:
    """The model a raw log names most often (None: it names none)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    counts: Counter[bytes] = Counter()
    at = data.find(KEY)
    while at >= 0:  # `find` runs at memory speed; the pattern is tried only where the key is
        m = MODEL.match(data, at)
        if m and m[1] not in NOT_A_MODEL:
            counts[m[1]] += 1
        at = data.find(KEY, at + len(KEY))
    return counts.most_common(1)[0][0].decode("ascii") if counts else None


class ModelScan:
    """Raw log path -> model, filled on a background thread."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, int, str | None]] = {}
        self._lock = threading.Lock()
        self._todo: list[Path] = []
        self._thread: threading.Thread | None = None

    def models(self, paths: Iterable[Path]) -> tuple[dict[str, str | None], int]:
        """The model of each log read and current; how many are still to read (queued here)."""
        out: dict[str, str | None] = {}
        todo: list[Path] = []
        with self._lock:
            for p in paths:
                key = str(p)
                try:
                    st = p.stat()
                except OSError:
                    out[key] = None
                    continue
                seen = self._known.get(key)
                if seen is not None and seen[:2] == (st.st_size, st.st_mtime_ns):
                    out[key] = seen[2]
                else:
                    todo.append(p)
            if todo:
                self._todo = todo
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(
                        target=self._run, name="archive-mcp-ui-models", daemon=True
                    )
                    self._thread.start()
        return out, len(todo)

    def progress(self) -> tuple[int, int]:
        """Logs read so far and logs queued: what a cached page built on these models depends on."""
        with self._lock:
            return len(self._known), len(self._todo)

    def wait(self, timeout: float | None = None) -> None:
        """Until the queued logs are read (for tests and the bench)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._todo:
                    return
                path = self._todo.pop()
            try:
                st = path.stat()
            except OSError:
                continue
            model = log_model(path)
            with self._lock:
                self._known[str(path)] = (st.st_size, st.st_mtime_ns, model)
