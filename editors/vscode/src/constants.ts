/** Names shared by the extension's modules: commands, settings, protocol methods. */

export const EXTENSION_NAME = 'Engram';
export const CLIENT_ID = 'engram';
export const OUTPUT_CHANNEL = 'Engram';

/** The `engram` configuration section (package.json `contributes.configuration`). */
export const CONFIG_SECTION = 'engram';

export const Commands = {
  searchNotes: 'engram.searchNotes',
  reindex: 'engram.reindex',
  showStatus: 'engram.showStatus',
  relatedNotes: 'engram.relatedNotes',
  runBase: 'engram.runBase',
} as const;

/** Custom requests of engram-ls (docs/lsp.md). */
export const Methods = {
  search: 'engram/search',
  status: 'engram/status',
  related: 'engram/related',
  query: 'engram/query',
} as const;

/** The URI scheme of the read-only documents "Engram: Run Base View" shows. */
export const BASE_SCHEME = 'engram-base';

/** The default server program, looked up on PATH. */
export const DEFAULT_SERVER = 'engram-ls';

/** Python module that runs the server (`python -m engram_ls.lsp`). */
export const SERVER_MODULE = 'engram_ls.lsp';
