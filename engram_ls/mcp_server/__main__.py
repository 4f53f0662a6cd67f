"""``python -m engram_ls.mcp_server`` runs the MCP server."""

from engram_ls.mcp_server.server import main

raise SystemExit(main())
