"""The click CLI face over the `Archive` API."""
