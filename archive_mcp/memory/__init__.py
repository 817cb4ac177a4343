"""Workspace memory (Markdown + front matter) and the essence a new session reads first."""
