"""Wire logs -> records -> turns -> refined turns -> embeddings; one module per source format."""

from . import kimi_cli, kimi_code
from .model import ParseResult, Problem, Step, SubagentRun, ToolCall, Turn
from .refine import ExtractiveSummarizer, RefineContext, Summarizer, refine_turn
from .sources import Discovery, SessionSource, SourceFile, discover

PARSERS = {kimi_cli.SOURCE: kimi_cli.parse_wire, kimi_code.SOURCE: kimi_code.parse_wire}

__all__ = [
    "PARSERS", "Discovery", "ExtractiveSummarizer", "ParseResult", "Problem", "RefineContext",
    "SessionSource", "SourceFile", "Step", "SubagentRun", "Summarizer", "ToolCall", "Turn",
    "discover", "kimi_cli", "kimi_code", "refine_turn",
]
