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
  refreshTasks: 'engram.tasks.refresh',
  toggleTask: 'engram.tasks.toggle',
  /** Not in the palette: a Tasks view item's click (opens the note at the task). */
  openTask: 'engram.tasks.open',
} as const;

/** Commands of engram-ls, sent as `workspace/executeCommand` (docs/lsp.md). The language
 * client also registers each under its own name, so the extension's commands differ. */
export const ServerCommands = {
  toggleTask: 'engram.toggleTask',
} as const;

/** Views the extension contributes (package.json `contributes.views`). */
export const Views = {
  tasks: 'engram.tasks',
} as const;

/** The context key set while the extension is active (the Tasks view's `when`). */
export const ACTIVE_CONTEXT = 'engram.active';

/** Custom requests of engram-ls (docs/lsp.md). */
export const Methods = {
  search: 'engram/search',
  status: 'engram/status',
  related: 'engram/related',
  query: 'engram/query',
  tasks: 'engram/tasks',
} as const;

/** The URI scheme of the read-only documents "Engram: Run Base View" shows. */
export const BASE_SCHEME = 'engram-base';

/** The default server program, looked up on PATH. */
export const DEFAULT_SERVER = 'engram-ls';

/** Python module that runs the server (`python -m engram_ls.lsp`). */
export const SERVER_MODULE = 'engram_ls.lsp';
