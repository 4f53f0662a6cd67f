/**
 * The language server this extension carries (`bundled/libs`, made by
 * scripts/package_vscode.sh): Engram and its dependencies for one platform, for several
 * Python versions, run as `<python> -P -m engram_ls.lsp` with PYTHONPATH pointing inside.
 * Also finding and checking that Python. No vscode import: unit-tested under plain node.
 */
import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SERVER_MODULE } from './constants';

/** Where the bundle lies inside the extension. */
export const BUNDLE_DIR = path.join('bundled', 'libs');

/** The oldest Python that runs Engram. */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

export interface Bundle {
  /** Absolute path of `bundled/libs`. */
  libs: string;
  /** The VS Code platform target its binary wheels are for, e.g. `linux-x64`. */
  target: string;
  /** Engram's version. */
  engram: string;
  /** The Python versions (`3.11`, …) it has a folder for (`cp311`, …). */
  pythons: string[];
  /** The folder, under `libs`, of what every Python shares. */
  common: string;
  /** The folder, under `libs`, of `rg`. */
  bin: string;
}

/** The bundle's `bundle.json` is there but unreadable (a broken build of the extension). */
export class BundleError extends Error {}

/** The bundle of the extension installed at `extensionPath`, or undefined when it was built
 * without one (`npm run build` for development). */
export function readBundle(extensionPath: string): Bundle | undefined {
  const libs = path.join(extensionPath, BUNDLE_DIR);
  const file = path.join(libs, 'bundle.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return undefined;
    }
    throw new BundleError(`cannot read ${file}: ${String(error)}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new BundleError(`${file} is not JSON: ${String(error)}`);
  }
  const value = data as Record<string, unknown>;
  const str = (key: string) => (typeof value?.[key] === 'string' ? (value[key] as string) : undefined);
  const pythons = value?.pythons;
  const target = str('target');
  const engram = str('engram');
  if (
    !target ||
    !engram ||
    !Array.isArray(pythons) ||
    pythons.length === 0 ||
    !pythons.every((v) => typeof v === 'string' && /^3\.\d+$/.test(v))
  ) {
    throw new BundleError(`${file} lacks its target, engram version or pythons`);
  }
  return { libs, target, engram, pythons, common: str('common') ?? 'common', bin: str('bin') ?? 'common/bin' };
}

/** This machine as a VS Code platform target (`linux-x64`, `darwin-arm64`, `alpine-x64`, …). */
export function hostTarget(platform: string = process.platform, arch: string = process.arch, musl = isMusl()): string {
  if (platform === 'linux' && musl) {
    return `alpine-${arch}`;
  }
  return `${platform}-${arch}`;
}

function isMusl(): boolean {
  if (process.platform !== 'linux') {
    return false;
  }
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header !== undefined && !report.header.glibcVersionRuntime;
}

export interface PythonInfo {
  /** The interpreter's path, as it was run. */
  executable: string;
  version: [number, number, number];
  /** `cpython`, `pypy`, … */
  implementation: string;
  /** A free-threaded build (3.13t): its binary wheels differ. */
  freeThreaded: boolean;
}

// Runs on any Python, even 2.7, so an old one is named with its version.
const PROBE =
  'import sys, sysconfig; i = getattr(sys, "implementation", None); ' +
  'sys.stdout.write("%d.%d.%d %s %d" % (sys.version_info[0], sys.version_info[1], sys.version_info[2], ' +
  'i.name if i else "cpython", 1 if sysconfig.get_config_var("Py_GIL_DISABLED") else 0))';

/** Parse the probe's output; undefined when it is not what the probe prints. */
export function parseProbe(executable: string, output: string): PythonInfo | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+) (\S+) ([01])$/.exec(output.trim());
  if (!match) {
    return undefined;
  }
  return {
    executable,
    version: [Number(match[1]), Number(match[2]), Number(match[3])],
    implementation: match[4],
    freeThreaded: match[5] === '1',
  };
}

/** Run `executable` to learn its version; rejects with the reason it could not be asked. */
export function probePython(executable: string, timeoutMs = 15000): Promise<PythonInfo> {
  return new Promise((resolve, reject) => {
    cp.execFile(executable, ['-c', PROBE], { timeout: timeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      if (error) {
        const detail = String(stderr).trim().split('\n').pop() || error.message;
        reject(new Error(detail));
        return;
      }
      const info = parseProbe(executable, String(stdout));
      if (info) {
        resolve(info);
      } else {
        reject(new Error(`it printed ${JSON.stringify(String(stdout).slice(0, 80))} for its version`));
      }
    });
  });
}

export function versionText(info: PythonInfo): string {
  return info.version.join('.');
}

function minorText([major, minor]: readonly number[]): string {
  return `${major}.${minor}`;
}

/** The range of the bundle's Pythons, e.g. `3.11 to 3.14`. */
export function bundlePythons(bundle: Bundle): string {
  const sorted = [...bundle.pythons].sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
  return sorted.length === 1 ? sorted[0] : `${sorted[0]} to ${sorted[sorted.length - 1]}`;
}

/** Why this Python cannot run the bundled server, or undefined when it can. */
export function unfitReason(info: PythonInfo, bundle: Bundle): string | undefined {
  const version = versionText(info);
  if (info.implementation !== 'cpython') {
    return `is ${info.implementation} ${version}, not CPython`;
  }
  const [major, minor] = info.version;
  if (major !== MIN_PYTHON[0] || minor < MIN_PYTHON[1]) {
    return `is Python ${version}, older than ${minorText(MIN_PYTHON)}`;
  }
  if (info.freeThreaded) {
    return `is a free-threaded build of Python ${version}, which the bundled server has no wheels for`;
  }
  if (!bundle.pythons.includes(`${major}.${minor}`)) {
    return `is Python ${version}; this build of the extension carries Engram for Python ${bundlePythons(bundle)}`;
  }
  return undefined;
}

/** The environment's `PATH` key as it is spelled (`Path` on Windows). */
function pathKey(env: Record<string, string | undefined>): string {
  return Object.keys(env).find((key) => key.toUpperCase() === 'PATH') ?? 'PATH';
}

/**
 * The bundled server's program, arguments and the environment variables it adds:
 * PYTHONPATH (the Python's own folder, then the common one; what the environment had is
 * replaced), PATH with the bundle's `rg` first, and where Python writes its bytecode cache
 * (`pycachePrefix`, outside the extension's folder). `-P`: the vault (the working folder) is
 * not on `sys.path`.
 */
export function bundledCommand(
  bundle: Bundle,
  python: PythonInfo,
  logLevel: string,
  env: Record<string, string | undefined>,
  pycachePrefix?: string,
): { command: string; args: string[]; env: Record<string, string> } {
  const [major, minor] = python.version;
  const key = pathKey(env);
  const vars: Record<string, string> = {
    PYTHONPATH: [path.join(bundle.libs, `cp${major}${minor}`), path.join(bundle.libs, bundle.common)].join(
      path.delimiter,
    ),
    [key]: [path.join(bundle.libs, bundle.bin), env[key]].filter(Boolean).join(path.delimiter),
  };
  if (pycachePrefix) {
    vars.PYTHONPYCACHEPREFIX = pycachePrefix;
  }
  return { command: python.executable, args: ['-P', '-m', SERVER_MODULE, '--log-level', logLevel], env: vars };
}

/** Make the bundle's `rg` executable if unzipping lost its mode; false when it is missing. */
export function ensureRg(bundle: Bundle, platform: string = process.platform): boolean {
  const rg = path.join(bundle.libs, bundle.bin, platform === 'win32' ? 'rg.exe' : 'rg');
  try {
    if (platform !== 'win32') {
      try {
        fs.accessSync(rg, fs.constants.X_OK);
      } catch {
        fs.chmodSync(rg, 0o755);
      }
    }
    return fs.statSync(rg).isFile();
  } catch {
    return false;
  }
}
