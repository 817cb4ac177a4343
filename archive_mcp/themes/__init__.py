"""Themes: tagging, discovery by clustering, and timelines traced with Polars."""
