"""``python -m engram_ls.lsp`` runs the language server."""

from engram_ls.lsp.server import main

raise SystemExit(main())
