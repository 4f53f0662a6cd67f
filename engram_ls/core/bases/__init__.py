"""Obsidian Bases: ``.base`` files and ```` ```base ```` blocks answered from the index
(docs/queries.md, "Obsidian Bases")."""
