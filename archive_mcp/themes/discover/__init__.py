"""Discovering themes: the workspace's turns clustered into suggested themes (`discovery.py`) by a
graph cut (`graph.py`) over their vectors (`vectors.py`, `topics.py`), k-means for the sampled
large case (`kmeans.py`)."""
