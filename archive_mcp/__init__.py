"""archive-mcp: archive, refine, search and trace AI coding-agent sessions."""

from workspaces import Workspace, WorkspaceError

from .archive import Archive, RefineReport, Stats
from .demo import sample_archive
from .ingest import IngestReport, Skip

__all__ = ["Archive", "IngestReport", "RefineReport", "Skip", "Stats", "Workspace", "WorkspaceError",
           "sample_archive"]
__version__ = "0.1.0"
