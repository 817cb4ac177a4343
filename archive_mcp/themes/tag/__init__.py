"""Tagging a theme: seeds searched and their hits scored (`tagging.py`), the learned membership
score (`membership.py`), the random walk over the turns around the hits (`walk.py`)."""
