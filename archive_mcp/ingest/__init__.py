"""Archiving: raw copies by byte offset, refinement into per-session Parquet, embeddings."""
