"""Generated sessions and the labelled generated retrieval set (regression checks, demos, benchmarks)."""
