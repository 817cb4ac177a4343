"""The one clock: timestamps for records (ISO 8601, UTC) and for file names."""

from __future__ import annotations

from datetime import UTC, datetime


def now(timespec: str = "seconds") -> str:
    """The current UTC time as ISO 8601, e.g. `2026-03-15T10:00:00+00:00`."""
    return datetime.now(UTC).isoformat(timespec=timespec)


def file_stamp(fmt: str = "%Y%m%dT%H%M%S%fZ") -> str:
    """The current UTC time for a file name, e.g. `20260315T100000123456Z`."""
    return datetime.now(UTC).strftime(fmt)
