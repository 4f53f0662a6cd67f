"""The language server adapter: LSP in, core calls, lsprotocol out."""
