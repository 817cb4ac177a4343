"""The held-out theme benches' shared library: the rules a setting is (`rules.py`). The entry
points (`themes_heldout.py`, `themes_trace_grid.py`, `members_learned.py`, `members_probe.py`,
`themes_story_errors.py`, `discovery_grid.py`) import it from `bench/`."""
