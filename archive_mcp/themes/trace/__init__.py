"""Tracing a theme: the member sessions read (`sessions.py`), the timeline built (`timeline.py`)
over the trace's model (`model.py`), its decisions and changes of course (`decisions.py`), where
it stands (`standing.py`), rendered in budget (`story.py`)."""
