"""The persistent SQLite index: schema, connections and typed queries."""
