"""archive-mcp: archive, refine, search and trace AI coding-agent sessions."""

from archive_mcp.archive import Archive, RefineReport, Stats
from archive_mcp.demo import sample_archive
from archive_mcp.ingest.pipeline import IngestReport, Skip
from archive_mcp.search.engine import Filters
from archive_mcp.workspaces import Workspace, WorkspaceError

__all__ = [
    "Archive",
    "Filters",
    "IngestReport",
    "RefineReport",
    "Skip",
    "Stats",
    "Workspace",
    "WorkspaceError",
    "sample_archive",
]
__version__ = "0.1.0"
