import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type { Bundle, PythonInfo } from '../src/bundle';
import { type ResolveDeps, resolveServer } from '../src/server';
import { DEFAULTS, type EngramSettings } from '../src/settings';

const bundle: Bundle = {
  libs: '/ext/bundled/libs',
  target: 'linux-x64',
  engram: '0.1.0',
  pythons: ['3.11', '3.12', '3.13', '3.14'],
  common: 'common',
  bin: 'common/bin',
};
const ctx = { home: '/home/me', workspaceFolder: '/srv/notes' };

/** A machine: the programs on it (name or path -> file) and each Python's version. */
function machine(programs: Record<string, string>, versions: Record<string, string>, extra: Partial<ResolveDeps> = {}): ResolveDeps {
  return {
    bundle,
    host: 'linux-x64',
    env: { PATH: '/usr/bin' },
    find: (command) => programs[command],
    probe: async (file): Promise<PythonInfo> => {
      const version = versions[file];
      if (!version) {
        throw new Error(`${file}: cannot execute binary file`);
      }
      const [major, minor, micro] = version.split('.').map(Number);
      return { executable: file, version: [major, minor, micro], implementation: 'cpython', freeThreaded: false };
    },
    pycachePrefix: '/storage/pycache',
    ...extra,
  };
}

const settings = (values: Partial<EngramSettings> = {}): EngramSettings => ({ ...DEFAULTS, ...values });

describe('resolveServer', () => {
  test('the bundled server with python3 from PATH', async () => {
    const resolved = await resolveServer(settings(), ctx, machine({ python3: '/usr/bin/python3' }, { '/usr/bin/python3': '3.12.1' }));
    assert.ok('server' in resolved, JSON.stringify(resolved));
    assert.equal(resolved.server.source, 'bundled');
    assert.equal(resolved.server.command, '/usr/bin/python3');
    assert.deepEqual(resolved.server.args, ['-P', '-m', 'engram_ls.lsp', '--log-level', 'WARNING']);
    assert.equal(resolved.server.env?.PYTHONPATH.split(path.delimiter)[0], '/ext/bundled/libs/cp312');
    assert.equal(resolved.server.description, 'Engram 0.1.0 (bundled), Python 3.12.1 (/usr/bin/python3)');
  });

  test('python3 too old: python is tried next', async () => {
    const resolved = await resolveServer(
      settings(),
      ctx,
      machine({ python3: '/usr/bin/python3', python: '/opt/py/bin/python' }, { '/usr/bin/python3': '3.9.2', '/opt/py/bin/python': '3.13.0' }),
    );
    assert.ok('server' in resolved);
    assert.equal(resolved.server.command, '/opt/py/bin/python');
  });

  test('engram.server.pythonPath is the only Python tried, expanded', async () => {
    const deps = machine(
      { '/home/me/py/bin/python': '/home/me/py/bin/python', python3: '/usr/bin/python3' },
      { '/home/me/py/bin/python': '3.11.7', '/usr/bin/python3': '3.12.1' },
    );
    const resolved = await resolveServer(settings({ pythonPath: '~/py/bin/python' }), ctx, deps);
    assert.ok('server' in resolved);
    assert.equal(resolved.server.command, '/home/me/py/bin/python');
    assert.equal(resolved.server.env?.PYTHONPATH.split(path.delimiter)[0], '/ext/bundled/libs/cp311');
  });

  test('an explicit engram.server.command wins over the bundle and pythonPath', async () => {
    const deps = machine({ '/opt/engram/bin/engram-ls': '/opt/engram/bin/engram-ls', python3: '/usr/bin/python3' }, { '/usr/bin/python3': '3.12.1' });
    const resolved = await resolveServer(
      settings({ serverCommand: ['/opt/engram/bin/engram-ls'], pythonPath: '/usr/bin/python3' }),
      ctx,
      deps,
    );
    assert.deepEqual(resolved, {
      server: { command: '/opt/engram/bin/engram-ls', args: ['--log-level', 'WARNING'], source: 'engram.server.command' },
    });
  });

  test('a missing engram.server.command is an error, not a silent fall back to the bundle', async () => {
    const resolved = await resolveServer(
      settings({ serverCommand: ['/nowhere/engram-ls'] }),
      ctx,
      machine({ python3: '/usr/bin/python3' }, { '/usr/bin/python3': '3.12.1' }),
    );
    assert.ok('error' in resolved);
    assert.match(resolved.error, /"\/nowhere\/engram-ls" \(setting engram\.server\.command\) does not exist/);
    assert.match(resolved.error, /clear it to use the server this extension carries/);
  });

  test('no Python at all: what to install and which setting, as one message', async () => {
    const resolved = await resolveServer(settings(), ctx, machine({}, {}));
    assert.deepEqual(resolved, {
      error:
        'Engram needs Python 3.11 or newer to run its language server, and found none: neither python3 nor python is on PATH. ' +
        "Install Python 3.11 to 3.14 (from python.org or your system's package manager), then set " +
        '"engram.server.pythonPath" to it if it is not on PATH as python3.',
    });
  });

  test('only unfit Pythons: each named with why', async () => {
    const resolved = await resolveServer(
      settings(),
      ctx,
      machine({ python3: '/usr/bin/python3', python: '/usr/bin/python' }, { '/usr/bin/python3': '3.10.13', '/usr/bin/python': '2.7.18' }),
    );
    assert.ok('error' in resolved);
    assert.equal(
      resolved.error,
      'Engram needs Python 3.11 to 3.14 to run its language server: "python3" on PATH (/usr/bin/python3) is Python 3.10.13, ' +
        'older than 3.11; "python" on PATH (/usr/bin/python) is Python 2.7.18, older than 3.11. ' +
        "Install Python 3.11 to 3.14 (from python.org or your system's package manager), then set " +
        '"engram.server.pythonPath" to it if it is not on PATH as python3.',
    );
    assert.doesNotMatch(resolved.error, /pip install/);
  });

  test('a Python that cannot be run says why', async () => {
    const resolved = await resolveServer(settings(), ctx, machine({ python3: '/usr/bin/python3' }, {}));
    assert.ok('error' in resolved);
    assert.match(resolved.error, /"python3" on PATH \(\/usr\/bin\/python3\) could not be run: \/usr\/bin\/python3: cannot execute binary file/);
  });

  test('a pythonPath that does not exist', async () => {
    const resolved = await resolveServer(
      settings({ pythonPath: '/opt/nope/python' }),
      ctx,
      machine({ python3: '/usr/bin/python3' }, { '/usr/bin/python3': '3.12.1' }),
    );
    assert.ok('error' in resolved);
    assert.match(resolved.error, /"\/opt\/nope\/python" \(setting engram\.server\.pythonPath\) does not exist or is not executable\. Set it to a Python 3\.11 or newer, or clear it/);
  });

  test('a bundle for another platform', async () => {
    const resolved = await resolveServer(
      settings(),
      ctx,
      machine({ python3: '/usr/bin/python3' }, { '/usr/bin/python3': '3.12.1' }, { host: 'darwin-arm64' }),
    );
    assert.ok('error' in resolved);
    assert.match(resolved.error, /carries its server for linux-x64, and this machine is darwin-arm64\. Install the \.vsix built for darwin-arm64/);
  });

  test('a build without a bundle: engram-ls from PATH, as before', async () => {
    const deps = machine({ 'engram-ls': '/usr/local/bin/engram-ls' }, {}, { bundle: undefined });
    assert.deepEqual(await resolveServer(settings(), ctx, deps), {
      server: { command: 'engram-ls', args: ['--log-level', 'WARNING'], source: 'default' },
    });
    const none = await resolveServer(settings(), ctx, { ...deps, find: () => undefined });
    assert.ok('error' in none);
    assert.match(none.error, /carries no language server, and "engram-ls" was not found on PATH/);
  });
});
