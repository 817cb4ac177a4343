"""The CLI's progress bars (no third-party renderer): drawn in place on a terminal and erased at
the end; a plain line every 30 s when stderr is not a terminal."""

from __future__ import annotations

import io
import os

import pytest

from archive_mcp.cli import common


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_are_drawn_in_place_one_per_label_and_erased(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = Tty()
    monkeypatch.setattr(common.sys, "stderr", tty)
    monkeypatch.setattr(common.shutil, "get_terminal_size", lambda: os.terminal_size((60, 20)))
    with common.progress_bar() as bar:
        bar("archive", 0, 4)
        bar("archive", 4, 4)
        bar("refine · 9 turns/s", 2, 2)
    assert tty.getvalue() == (
        "\x1b[2Karchive --------------------------------------- 0/4 -:--:--\n"
        "\x1b[1F\x1b[2Karchive ####################################### 4/4 0:00:00\n"
        "\x1b[1F\x1b[2Karchive ####################################### 4/4 0:00:00\n"
        "\x1b[2Krefine · 9 turns/s ############################ 2/2 0:00:00\n"
        "\x1b[2F\x1b[J"
    )


def test_without_a_terminal_a_plain_line_every_30_s(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(common.time, "monotonic", lambda: clock[0])
    lines: list[str] = []
    monkeypatch.setattr(
        common,
        "click",
        type(
            "C",
            (),
            {
                "echo": staticmethod(lambda text, err: lines.append(text)),
            },
        ),
    )
    with common.progress_bar() as bar:
        bar("archive", 1, 2000)
        clock[0] += 31
        bar("archive", 1500, 2000)
    assert lines == ["archive: 1,500/2,000"]
