/**
 * The extension's settings (the `engram` section), read once into a typed object with
 * defaults, and how they turn into the command that starts engram-ls. No vscode import here:
 * the caller passes a getter, so this module is unit-tested under plain node.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_SERVER, SERVER_MODULE } from './constants';
import { MIN_PYTHON } from './bundle';
import { DEFAULT_MODE, isSearchMode, SEARCH_MODES, type SearchMode } from './query';

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface EngramSettings {
  /** `engram.server.command`: program and arguments; empty = not set. */
  serverCommand: string[];
  /** `engram.server.pythonPath`: the Python that runs the bundled server (or, in a build
   * without one, a Python with Engram installed); '' = not set. */
  pythonPath: string;
  logLevel: LogLevel;
  /** `engram.settings`: config-file keys, the server's `engram` configuration section. */
  serverSettings: Record<string, unknown>;
  searchLimit: number;
  debounceMs: number;
  /** `engram.search.mode`: the picker's mode when the query has no `mode:` term. */
  searchMode: SearchMode;
}

export const DEFAULTS: EngramSettings = {
  serverCommand: [],
  pythonPath: '',
  logLevel: 'WARNING',
  serverSettings: {},
  searchLimit: 50,
  debounceMs: 150,
  searchMode: DEFAULT_MODE,
};

/** Keys (relative to `engram.`) whose change needs a new server process. A change of
 * `engram.settings` does not: the running server is told (`workspace/didChangeConfiguration`)
 * and reads them again. */
export const RESTART_KEYS = ['server'] as const;

/** Reads one key of the `engram` section (e.g. `WorkspaceConfiguration.get`). */
export type SettingGetter = (key: string) => unknown;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clampInt(value: unknown, min: number, max: number, fallback: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return fallback;
  }
  return Math.min(max, Math.max(min, Math.round(value)));
}

/** Settings with bad values replaced by defaults; `problems` says what was replaced. */
export function readSettings(get: SettingGetter): { settings: EngramSettings; problems: string[] } {
  const problems: string[] = [];
  const settings: EngramSettings = { ...DEFAULTS, serverCommand: [], serverSettings: {} };

  const command = get('server.command');
  if (typeof command === 'string') {
    // A single string is the program itself (no shell splitting: paths may hold spaces).
    settings.serverCommand = command.trim() ? [command.trim()] : [];
  } else if (Array.isArray(command)) {
    if (command.every((part) => typeof part === 'string')) {
      settings.serverCommand = command.length > 0 && command[0].trim() !== '' ? [...command] : [];
    } else {
      problems.push('engram.server.command must be a list of strings; it is ignored');
    }
  } else if (command !== undefined && command !== null) {
    problems.push('engram.server.command must be a list of strings; it is ignored');
  }

  const python = get('server.pythonPath');
  if (typeof python === 'string') {
    settings.pythonPath = python.trim();
  } else if (python !== undefined && python !== null) {
    problems.push('engram.server.pythonPath must be a string; it is ignored');
  }

  const level = get('server.logLevel');
  if (typeof level === 'string' && (LOG_LEVELS as readonly string[]).includes(level.toUpperCase())) {
    settings.logLevel = level.toUpperCase() as LogLevel;
  } else if (level !== undefined && level !== null) {
    problems.push(`engram.server.logLevel must be one of ${LOG_LEVELS.join(', ')}; using WARNING`);
  }

  const serverSettings = get('settings');
  if (isPlainObject(serverSettings)) {
    settings.serverSettings = { ...serverSettings };
  } else if (serverSettings !== undefined && serverSettings !== null) {
    problems.push('engram.settings must be an object of .engram/config.yaml keys; it is ignored');
  }

  settings.searchLimit = clampInt(get('search.limit'), 1, 1000, DEFAULTS.searchLimit);
  settings.debounceMs = clampInt(get('search.debounceMs'), 0, 2000, DEFAULTS.debounceMs);

  const mode = get('search.mode');
  if (isSearchMode(mode)) {
    settings.searchMode = mode;
  } else if (mode !== undefined && mode !== null) {
    problems.push(`engram.search.mode must be one of ${SEARCH_MODES.join(', ')}; using ${DEFAULT_MODE}`);
  }
  return { settings, problems };
}

/** What `${workspaceFolder}`, `${userHome}` and a leading `~` expand to. */
export interface ExpandContext {
  home: string;
  workspaceFolder?: string;
}

export function expandPath(value: string, ctx: ExpandContext): string {
  let out = value;
  if (out === '~' || out.startsWith('~/')) {
    out = ctx.home + out.slice(1);
  }
  out = out.replace(/\$\{userHome\}/g, ctx.home);
  if (ctx.workspaceFolder !== undefined) {
    out = out.replace(/\$\{workspaceFolder\}/g, ctx.workspaceFolder);
  }
  return out;
}

export interface ServerCommand {
  command: string;
  args: string[];
  /** Which setting produced it, for messages; `bundled`: the server the extension carries. */
  source: 'engram.server.command' | 'engram.server.pythonPath' | 'default' | 'bundled';
  /** Environment variables added to the extension host's for the server. */
  env?: Record<string, string>;
  /** What runs, for the log and "Engram: Show Index Status". */
  description?: string;
}

/**
 * The server's program and arguments without the bundled server (server.ts decides when):
 * `engram.server.command` if set, else `<pythonPath> -m engram_ls.lsp`, else `engram-ls` from
 * PATH. The transport adds `--stdio`.
 */
export function resolveServerCommand(settings: EngramSettings, ctx: ExpandContext): ServerCommand {
  const logArgs = ['--log-level', settings.logLevel];
  if (settings.serverCommand.length > 0) {
    const [program, ...rest] = settings.serverCommand.map((part) => expandPath(part, ctx));
    return { command: program, args: [...rest, ...logArgs], source: 'engram.server.command' };
  }
  if (settings.pythonPath) {
    return {
      command: expandPath(settings.pythonPath, ctx),
      args: ['-m', SERVER_MODULE, ...logArgs],
      source: 'engram.server.pythonPath',
    };
  }
  return { command: DEFAULT_SERVER, args: logArgs, source: 'default' };
}

function isExecutableFile(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The file a command runs: itself when it contains a path separator, else the first match on
 * `PATH` (with `PATHEXT` on Windows). Undefined when nothing executable is found.
 */
export function findExecutable(
  command: string,
  env: Record<string, string | undefined> = process.env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const exts =
    platform === 'win32' ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').filter(Boolean)] : [''];
  const check = (file: string) => exts.map((ext) => file + ext).find((f) => isExecutableFile(f));
  if (command.includes('/') || (platform === 'win32' && command.includes('\\'))) {
    return check(command);
  }
  const sep = platform === 'win32' ? ';' : ':';
  for (const dir of (env.PATH ?? '').split(sep)) {
    if (!dir) {
      continue;
    }
    const found = check(path.join(dir, command));
    if (found) {
      return found;
    }
  }
  return undefined;
}

/** How to get a server when the extension carries none (a development build). */
const FIX_NO_BUNDLE =
  'Install the .vsix built for your platform, which carries the server (docs/editors.md in the ' +
  'Engram repository), or install Engram from its repository into a Python 3.11+ environment ' +
  '(`python -m pip install ./engram`) and set "engram.server.command" to its engram-ls ' +
  '(e.g. ["/path/to/.venv/bin/engram-ls"]).';

/** How to fix a server command that does not run, when the extension carries a server. */
const FIX_COMMAND = 'Fix the setting, or clear it to use the server this extension carries.';

/**
 * The message shown when the server's program does not exist, or undefined when it does.
 * `bundled`: the extension carries a server (clearing the setting falls back to it).
 */
export function missingServerMessage(
  server: ServerCommand,
  exists: (command: string) => boolean,
  bundled = false,
): string | undefined {
  if (exists(server.command)) {
    return undefined;
  }
  switch (server.source) {
    case 'default':
      return `Engram: this build of the extension carries no language server, and "engram-ls" was not found on PATH. ${FIX_NO_BUNDLE}`;
    case 'engram.server.command':
      return `Engram: "${server.command}" (setting engram.server.command) does not exist or is not executable. ${bundled ? FIX_COMMAND : FIX_NO_BUNDLE}`;
    case 'bundled':
      return `Engram: the Python interpreter "${server.command}" does not exist any more. Reload the window to look for Python again.`;
    case 'engram.server.pythonPath':
      return (
        `Engram: the Python interpreter "${server.command}" (setting engram.server.pythonPath) does not exist or is not executable. ` +
        (bundled
          ? `Set it to a Python ${MIN_PYTHON.join('.')} or newer, or clear it to use python3 from PATH.`
          : `Set it to a Python that has Engram installed, or clear it. ${FIX_NO_BUNDLE}`)
      );
  }
}

/** The message shown when the server process started but the language client failed. */
export function startFailureMessage(server: ServerCommand, error: unknown): string {
  const reason = error instanceof Error ? error.message : String(error);
  const cmdline = [server.command, ...server.args].join(' ');
  let hint = '';
  if (server.source === 'engram.server.pythonPath') {
    hint =
      'Does this Python have Engram installed? Install it there from the Engram repository ' +
      `("${server.command} -m pip install ./engram"), or install the .vsix built for your platform, which carries the server. `;
  } else if (server.source === 'bundled') {
    hint = `This is the server the extension carries (${server.description ?? 'bundled'}). `;
  }
  return `Engram: the language server (${cmdline}) could not start: ${reason}. ${hint}The "Engram" output channel has the server's log.`;
}
