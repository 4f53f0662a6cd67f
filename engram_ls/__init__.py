"""Engram: a persistent, incremental index for Markdown vaults."""

__version__ = "0.1.0"
