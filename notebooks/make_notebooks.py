"""Regenerate the analyst notebooks (outputs cleared). Edit the cells here, then run:

python notebooks/make_notebooks.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

OPEN = '''import os
import tempfile
from pathlib import Path

import polars as pl

from archive_mcp import Archive, plot, sample_archive

%matplotlib inline

# The one line to change: None builds the bundled sample in a temporary directory;
# a path (e.g. "~/.local/share/archive-mcp") opens your own archive.
ARCHIVE_HOME = None

ARCHIVE_HOME = ARCHIVE_HOME or os.environ.get("ARCHIVE_MCP_NOTEBOOK_HOME")  # CI also runs these on a second archive
archive = sample_archive() if ARCHIVE_HOME is None else Archive(Path(ARCHIVE_HOME).expanduser())
figures = Path(tempfile.mkdtemp(prefix="archive-mcp-figures-"))
pl.Config.set_tbl_rows(12)


def saved(fig, name):
    """Save a figure (CI checks the PNG) and return it, so the notebook shows it inline."""
    path = figures / name
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n", path
    return fig
'''

NOTEBOOKS = {
    "01_explore_archive.ipynb": [
        new_markdown_cell(
            "# Explore an archive\n\nWorkspaces, activity over time, busiest sessions, tool usage and "
            "failure rates, tokens — all as Polars frames from the public `Archive` API."
        ),
        new_code_cell(OPEN),
        new_code_cell(
            "pl.DataFrame([{'id': w.id, 'name': w.name, 'paths': ', '.join(w.paths)} for w in archive.workspaces()])"
        ),
        new_markdown_cell("## Activity over time"),
        new_code_cell(
            "turns = archive.turns('all').collect()\n"
            "if turns.height == 0:\n"
            "    print('This archive holds no refined turns yet: run `archive-mcp ingest` first.')\n"
            "else:\n"
            "    display(saved(plot.activity(turns, every='1w', title='Turns per week'), 'activity.png'))"
        ),
        new_markdown_cell("## Busiest sessions"),
        new_code_cell(
            "sessions = archive.sessions('all').collect()\n"
            "busiest = sessions.sort('turns', descending=True).head(10)\n"
            "busiest.select('title', 'turns', 'input_tokens', 'output_tokens', 'first_at')"
        ),
        new_markdown_cell("## Tool usage and failure rates"),
        new_code_cell(
            "calls = archive.tool_calls('all').collect()\n"
            "usage = (calls.group_by('name')\n"
            "         .agg(pl.len().alias('calls'),\n"
            "              (pl.col('status') != 'ok').mean().round(3).alias('failure_rate'),\n"
            "              pl.col('duration_ms').median().alias('median_ms'))\n"
            "         .sort('calls', descending=True))\n"
            "if usage.height:\n"
            "    display(saved(plot.bar(usage, 'name', 'calls', 'Tool calls'), 'tools.png'))\n"
            "else:\n"
            "    print('No tool calls in this archive.')\n"
            "usage"
        ),
        new_markdown_cell("## Tokens per workspace"),
        new_code_cell(
            "(turns.group_by('workspace_id')\n"
            "      .agg(pl.col('usage').struct.field('input').sum().alias('input'),\n"
            "           pl.col('usage').struct.field('output').sum().alias('output'),\n"
            "           pl.len().alias('turns'))\n"
            "      .sort('input', descending=True))"
        ),
        new_code_cell(
            "kinds = turns.explode('kinds').drop_nulls('kinds').group_by('kinds').len().sort('len', descending=True)\n"
            "if kinds.height:\n"
            "    display(saved(plot.bar(kinds, 'kinds', 'len', 'What turns were about (kinds)'), 'kinds.png'))\n"
            "kinds"
        ),
    ],
    "02_theme_timelines.ipynb": [
        new_markdown_cell(
            "# Theme timelines\n\nDiscover themes, trace two of them, plot themes over time and find "
            "the decisions that were later reversed."
        ),
        new_code_cell(OPEN),
        new_markdown_cell(
            "**This notebook writes themes** (`discover_themes` stores its suggestions, `tag_theme` "
            "the themes it tags). On your own archive it therefore works on a copy (the refined "
            "turns, indexes and themes; not the raw logs) in a temporary directory, and your archive "
            "is left as it was. Set `WRITE_THEMES = True` to tag into your archive itself."
        ),
        new_code_cell(
            "import shutil\n\n"
            "WRITE_THEMES = False  # True: the themes found and tagged below stay in your archive\n\n"
            "if ARCHIVE_HOME is not None and not WRITE_THEMES:\n"
            "    copy = Path(tempfile.mkdtemp(prefix='archive-mcp-themes-')) / 'home'\n"
            "    shutil.copytree(archive.home, copy, ignore=shutil.ignore_patterns('raw', '.lock'))\n"
            "    archive = Archive(copy)\n"
            "    print(f'Working on a copy of {ARCHIVE_HOME}: themes go to {copy}, not to your archive.')\n"
            "elif ARCHIVE_HOME is not None:\n"
            "    print(f'WRITE_THEMES is on: themes are written into {ARCHIVE_HOME}.')"
        ),
        new_markdown_cell("Pick the workspace worth showing: the busiest one (most turns)."),
        new_code_cell(
            "busiest = archive.turns('all').group_by('workspace_id').len().sort('len', 'workspace_id', descending=True).collect()\n"
            "workspace = busiest['workspace_id'][0] if busiest.height else None\n"
            "found = archive.discover_themes(workspace) if workspace else None\n"
            "if found is None:\n"
            "    print('This archive holds no refined turns yet: run `archive-mcp ingest` first.')\n"
            "elif not found.themes:\n"
            "    print(f'No themes in {archive.workspace(workspace).name}: {found.turns} turns form no cluster '\n"
            "          'that recurs (two sessions, or a long thread of one). Tag one by hand with archive.tag_theme(name, workspace, seeds=[...]).')\n"
            "else:\n"
            "    display(pl.DataFrame([{'slug': t.slug, 'turns': len(t.members), 'label': t.name} for t in found.themes]))"
        ),
        new_markdown_cell(
            "Tag two themes from seeds (in the sample, planted ones; in your archive, the discovered labels)."
        ),
        new_code_cell(
            "seeds = {'payment retries': ['charge_card retries PSP'], 'auth tokens': ['issue_access_token JWT']}\n"
            "if ARCHIVE_HOME is not None:\n"
            "    seeds = {t.name: [t.name.replace(' / ', ' ')] for t in (found.themes if found else [])[:2]}\n"
            "timelines = []\n"
            "for name, s in seeds.items():\n"
            "    r = archive.tag_theme(name, workspace, seeds=s, who='notebook')\n"
            "    print(f'{name}: {r.members} turns, {len(r.near_misses)} near misses')\n"
            "    if r.members:\n"
            "        timelines.append(archive.trace_theme(name, workspace))\n"
            "if not timelines:\n"
            "    print('No theme to trace in this archive.')\n"
            "else:\n"
            "    display(timelines[0].frame.select('started_at', 'bucket', 'summary', 'kinds'))"
        ),
        new_markdown_cell("## Themes over time"),
        new_code_cell(
            "if timelines:\n"
            "    display(saved(plot.themes_over_time(timelines), 'themes_over_time.png'))"
        ),
        new_markdown_cell(
            "## Reversals: later decisions that may undo earlier ones\n\n"
            "A trace claims no change of course by default: held out, 8-31% of the claims were "
            "labelled changes (`bench/results/themes-heldout.md`). `claim_changes=True` turns the "
            "claims on; read them as candidates to check with `load_turn_context`."
        ),
        new_code_cell(
            "from dataclasses import replace\n\n"
            "from archive_mcp.themes.trace.rules import TRACE_RULES\n\n"
            "claiming = replace(TRACE_RULES, claim_changes=True)\n"
            "claimed = [archive.trace_theme(tl.theme, workspace, rules=claiming) for tl in timelines]\n"
            "pl.DataFrame([{'theme': tl.theme, 'decided': r.decision.at, 'reversed': r.reversed_by.at,\n"
            "               'shared_terms': ', '.join(r.shared_terms), 'reversal': r.reversed_by.summary[:120]}\n"
            "              for tl in claimed for r in tl.reversals],\n"
            "             schema={'theme': pl.String, 'decided': pl.String, 'reversed': pl.String,\n"
            "                     'shared_terms': pl.String, 'reversal': pl.String})"
        ),
        new_code_cell(
            "from IPython.display import Markdown\n\n"
            "Markdown(timelines[0].markdown(4000) if timelines else '*No theme to narrate.*')"
        ),
    ],
    "03_search_quality.ipynb": [
        new_markdown_cell(
            "# Search quality\n\nRun the labelled retrieval set (planted decisions; queries that name "
            "identifiers, misspell them, paraphrase them or ask in Chinese) and compare modes.\n\n"
            "The labelled set needs its labels, so it runs on an evaluation archive built in a "
            "temporary directory. `ARCHIVE_HOME` (or `ARCHIVE_MCP_NOTEBOOK_HOME`) is honoured where "
            "no labels are needed: the last cell runs your own query on your archive (None: on the "
            "evaluation archive)."
        ),
        new_code_cell(
            OPEN.replace(
                "archive = sample_archive() if ARCHIVE_HOME is None else Archive(Path(ARCHIVE_HOME).expanduser())\n",
                "archive = None if ARCHIVE_HOME is None else Archive(Path(ARCHIVE_HOME).expanduser())\n",
            ).replace(
                "from archive_mcp import Archive, plot, sample_archive",
                "from archive_mcp import Archive, plot",
            )
        ),
        new_code_cell(
            "from archive_mcp.synthetic import evaluation\n\n"
            "root = Path(tempfile.mkdtemp(prefix='archive-mcp-eval-'))\n"
            "queries = evaluation.build(root / 'kimi')\n"
            "eval_archive = Archive(root / 'home')\n"
            "eval_archive.ingest(root / 'kimi')\n"
            "results = evaluation.evaluate(eval_archive, queries)\n"
            "rows = [{'mode': m, 'kind': k, **v} for m, kinds in results.items() for k, v in kinds.items()]\n"
            "table = pl.DataFrame(rows)\n"
            "table.filter(pl.col('kind') == 'all').sort('mrr', descending=True)"
        ),
        new_code_cell("table.pivot(on='kind', index='mode', values='recall@5')"),
        new_code_cell(
            "hybrid = table.filter(pl.col('mode') == 'hybrid', pl.col('kind') == 'all')['mrr'][0]\n"
            "singles = table.filter(pl.col('mode').is_in(['lexical', 'fuzzy', 'semantic']), pl.col('kind') == 'all')['mrr']\n"
            "print(f'hybrid MRR {hybrid:.3f} vs best single signal {singles.max():.3f}')\n"
            "display(saved(plot.bar(table.filter(pl.col('kind') == 'all'), 'mode', 'recall@5', 'Recall@5 by mode'), 'recall.png'))"
        ),
        new_markdown_cell(
            "Try your own query: on your archive (all its workspaces) when `ARCHIVE_HOME` is set, "
            "else on the evaluation archive."
        ),
        new_code_cell(
            "QUERY = 'why did we stop using Jest'\n"
            "if archive is not None:\n"
            "    print(f'Searching {ARCHIVE_HOME} (all workspaces)')\n"
            "    hits = archive.search(QUERY, workspace='all', limit=3)\n"
            "else:\n"
            "    print('Searching the evaluation archive')\n"
            "    hits = eval_archive.search(QUERY, workspace='retrieval-eval', limit=3)\n"
            "for h in hits:\n"
            "    print(f'{h.score:.3f} {\"+\".join(h.matched):24s} {h.summary[:100]}')\n"
            "if not hits:\n"
            "    print('no hits')"
        ),
    ],
}

if __name__ == "__main__":
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(
            cells=cells,
            metadata={
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
        )
        nbformat.write(nb, HERE / name)
        print("wrote", name)
