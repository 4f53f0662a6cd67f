"""``python -m engram_ls`` runs the command line."""

from engram_ls.cli import main

raise SystemExit(main())
