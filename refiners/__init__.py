"""Wire logs -> records -> turns -> refined turns -> embeddings; one module per source format.

Importing this package registers every reader (`sources.READERS`); `PARSERS` maps a source name
to its parser.
"""

if (
    __name__ != "archive_mcp.refiners"
):  # one module identity: the repo's `refiners/` installs as archive_mcp.refiners
    raise ImportError(
        f"import archive_mcp.refiners, not {__name__} (pip install -e . maps refiners/ into the package)"
    )


from . import (
    aider,
    claude_code,
    cline,
    codex,
    continue_cli,
    copilot,
    crush,
    cursor,
    cursor_cli,
    droid,
    gemini,
    goose,
    kilo,
    kimi_cli,
    kimi_code,
    opencode,
    pi,
    qwen_code,
    vscode_chat,
)
from .model import ParseResult, Problem, Step, SubagentRun, ToolCall, Turn
from .refine import ExtractiveSummarizer, RefineContext, Summarizer, refine_turn
from .sources import READERS, Discovery, Reader, SessionSource, SourceFile, discover

PARSERS = {name: reader.parse for name, reader in READERS.items()}
SOURCES = tuple(READERS)

__all__ = [
    "PARSERS",
    "READERS",
    "SOURCES",
    "Discovery",
    "ExtractiveSummarizer",
    "ParseResult",
    "Problem",
    "Reader",
    "RefineContext",
    "SessionSource",
    "SourceFile",
    "Step",
    "SubagentRun",
    "Summarizer",
    "ToolCall",
    "Turn",
    "aider",
    "cline",
    "claude_code",
    "codex",
    "continue_cli",
    "copilot",
    "crush",
    "cursor",
    "cursor_cli",
    "discover",
    "droid",
    "gemini",
    "goose",
    "kilo",
    "kimi_cli",
    "kimi_code",
    "opencode",
    "pi",
    "qwen_code",
    "refine_turn",
    "vscode_chat",
]
