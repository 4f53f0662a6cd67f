/**
 * Which server to start, and the message when none can be:
 *   1. `engram.server.command`, when set, as given;
 *   2. the server the extension carries (`bundled/libs`), run by a Python 3.11+: the one in
 *      `engram.server.pythonPath`, else `python3` or `python` from PATH;
 *   3. in a build without a bundle: `<engram.server.pythonPath> -m engram_ls.lsp`, else
 *      `engram-ls` from PATH.
 * No vscode import: the caller passes how to find programs and ask a Python its version.
 */
import { type Bundle, bundledCommand, bundlePythons, MIN_PYTHON, type PythonInfo, unfitReason, versionText } from './bundle';
import {
  type EngramSettings,
  type ExpandContext,
  expandPath,
  missingServerMessage,
  resolveServerCommand,
  type ServerCommand,
} from './settings';

/** The Pythons looked up on PATH when `engram.server.pythonPath` is not set, in order. */
export const PYTHON_NAMES = ['python3', 'python'] as const;

export type Resolved = { server: ServerCommand } | { error: string };

export interface ResolveDeps {
  /** The extension's bundle, or undefined for a build without one. */
  bundle: Bundle | undefined;
  /** This machine's platform target (bundle.ts `hostTarget`). */
  host: string;
  /** The extension host's environment (its PATH gets the bundle's `rg` in front). */
  env: Record<string, string | undefined>;
  /** The file a command runs, or undefined (settings.ts `findExecutable`). */
  find: (command: string) => string | undefined;
  /** A Python's version (bundle.ts `probePython`); rejects when it cannot be run. */
  probe: (executable: string) => Promise<PythonInfo>;
  /** Where the server's Python writes its bytecode cache. */
  pycachePrefix?: string;
}

const MIN = MIN_PYTHON.join('.');

export async function resolveServer(settings: EngramSettings, ctx: ExpandContext, deps: ResolveDeps): Promise<Resolved> {
  const { bundle } = deps;
  if (settings.serverCommand.length > 0 || bundle === undefined) {
    const server = resolveServerCommand(settings, ctx);
    const missing = missingServerMessage(server, (command) => deps.find(command) !== undefined, bundle !== undefined);
    return missing ? { error: missing } : { server };
  }
  if (bundle.target !== deps.host) {
    return {
      error:
        `Engram: this build of the extension carries its server for ${bundle.target}, and this machine is ${deps.host}. ` +
        `Install the .vsix built for ${deps.host}, or set "engram.server.command" to an engram-ls you installed.`,
    };
  }
  const fromSetting = settings.pythonPath !== '';
  const candidates = fromSetting ? [expandPath(settings.pythonPath, ctx)] : [...PYTHON_NAMES];
  const reasons: string[] = [];
  for (const name of candidates) {
    const file = deps.find(name);
    if (file === undefined) {
      if (fromSetting) {
        return {
          error:
            `Engram: the Python interpreter "${name}" (setting engram.server.pythonPath) does not exist or is not executable. ` +
            `Set it to a Python ${MIN} or newer, or clear it to use python3 from PATH.`,
        };
      }
      continue;
    }
    const label = fromSetting
      ? `"${name}" (setting engram.server.pythonPath)`
      : `"${name}" on PATH${file === name ? '' : ` (${file})`}`;
    let info: PythonInfo;
    try {
      info = await deps.probe(file);
    } catch (error) {
      reasons.push(`${label} could not be run: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    const unfit = unfitReason(info, bundle);
    if (unfit) {
      reasons.push(`${label} ${unfit}`);
      continue;
    }
    const { command, args, env } = bundledCommand(bundle, info, settings.logLevel, deps.env, deps.pycachePrefix);
    return {
      server: {
        command,
        args,
        env,
        source: 'bundled',
        description: `Engram ${bundle.engram} (bundled), Python ${versionText(info)} (${file})`,
      },
    };
  }
  const pythons = bundlePythons(bundle);
  const install =
    `Install Python ${pythons} (from python.org or your system's package manager), then set ` +
    `"engram.server.pythonPath" to it if it is not on PATH as python3.`;
  if (reasons.length === 0) {
    return {
      error: `Engram needs Python ${MIN} or newer to run its language server, and found none: neither python3 nor python is on PATH. ${install}`,
    };
  }
  return {
    error: `Engram needs Python ${pythons} to run its language server: ${reasons.join('; ')}. ${install}`,
  };
}
