"""The domain core: parsing, configuration, the SQLite index, sync and search.

Nothing in this package imports pygls, lsprotocol, mcp or the CLI (tests enforce it).
"""
