"""Retrieval: the per-workspace index, lexical/fuzzy/semantic signals, fusion, turn context."""
