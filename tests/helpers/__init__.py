"""Helpers shared by the storage tests and the processes they spawn (no tests live here)."""
