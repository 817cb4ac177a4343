"""Regenerate the bundled demo sample of planted themes (archive_mcp/sample/kimi-themes)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from theme_corpus import build  # noqa: E402

if __name__ == "__main__":
    out = Path(__file__).parent.parent / "archive_mcp" / "sample" / "kimi-themes"
    shutil.rmtree(out, ignore_errors=True)
    truth = build(out)
    (out / "LABELS.json").write_text(
        json.dumps(truth, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {sum(len(v) for v in truth['themes'].values())} theme turns to {out}")
