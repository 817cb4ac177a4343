"""The held-out theme benches' shared library: the rules a setting is (`rules.py`) and the
leave-one-project-out choice (`folds.py`). The entry points (`themes_heldout.py`,
`themes_trace_grid.py`, `members_learned.py`, `themes_story_errors.py`, `discovery_grid.py`)
import it from `bench/`, where Python puts a script's own folder on the path."""
