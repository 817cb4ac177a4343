"""archive-mcp: archive, refine, search and trace AI coding-agent sessions."""

from workspaces import Workspace, WorkspaceError

from .archive import Archive, RefineReport, Stats
from .ingest import IngestReport, Skip

__all__ = ["Archive", "IngestReport", "RefineReport", "Skip", "Stats", "Workspace", "WorkspaceError"]
__version__ = "0.1.0"
