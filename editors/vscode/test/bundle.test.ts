import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Bundle,
  BundleError,
  bundledCommand,
  bundlePythons,
  ensureRg,
  hostTarget,
  parseProbe,
  probePython,
  type PythonInfo,
  readBundle,
  unfitReason,
} from '../src/bundle';
import { findExecutable } from '../src/settings';

const bundle: Bundle = {
  libs: '/ext/bundled/libs',
  target: 'linux-x64',
  engram: '0.1.0',
  pythons: ['3.11', '3.12', '3.13', '3.14'],
  common: 'common',
  bin: 'common/bin',
};

const python = (version: [number, number, number], extra: Partial<PythonInfo> = {}): PythonInfo => ({
  executable: '/usr/bin/python3',
  version,
  implementation: 'cpython',
  freeThreaded: false,
  ...extra,
});

describe('readBundle', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engram bundle '));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string) => {
    const libs = path.join(dir, name, 'bundled', 'libs');
    fs.mkdirSync(libs, { recursive: true });
    fs.writeFileSync(path.join(libs, 'bundle.json'), text);
    return path.join(dir, name);
  };

  test('a build without a bundle', () => {
    assert.equal(readBundle(path.join(dir, 'nothing-here')), undefined);
  });
  test('the manifest the packaging script writes', () => {
    const ext = write(
      'ok',
      '{"target": "linux-x64", "engram": "0.1.0", "pythons": ["3.11", "3.12"], "common": "common", "bin": "common/bin"}',
    );
    assert.deepEqual(readBundle(ext), {
      libs: path.join(ext, 'bundled', 'libs'),
      target: 'linux-x64',
      engram: '0.1.0',
      pythons: ['3.11', '3.12'],
      common: 'common',
      bin: 'common/bin',
    });
  });
  test('a broken manifest is an error, not "no bundle"', () => {
    assert.throws(() => readBundle(write('bad-json', '{')), BundleError);
    assert.throws(() => readBundle(write('no-pythons', '{"target": "linux-x64", "engram": "0.1.0"}')), /lacks/);
    assert.throws(
      () => readBundle(write('bad-python', '{"target": "linux-x64", "engram": "0.1.0", "pythons": ["cp311"]}')),
      /lacks/,
    );
  });
});

describe('hostTarget', () => {
  test('VS Code platform targets', () => {
    assert.equal(hostTarget('linux', 'x64', false), 'linux-x64');
    assert.equal(hostTarget('linux', 'x64', true), 'alpine-x64');
    assert.equal(hostTarget('darwin', 'arm64', false), 'darwin-arm64');
    assert.equal(hostTarget('win32', 'x64', false), 'win32-x64');
  });
});

describe('the Python that runs the bundled server', () => {
  test('the probe output', () => {
    assert.deepEqual(parseProbe('/p', '3.12.1 cpython 0\n'), python([3, 12, 1], { executable: '/p' }));
    assert.equal(parseProbe('/p', '3.13.0 cpython 1')?.freeThreaded, true);
    assert.equal(parseProbe('/p', 'Python 3.12.1'), undefined);
  });

  test('fit: CPython 3.11 to 3.14', () => {
    for (const minor of [11, 12, 13, 14]) {
      assert.equal(unfitReason(python([3, minor, 0]), bundle), undefined);
    }
  });
  test('unfit, and why', () => {
    assert.equal(unfitReason(python([3, 10, 13]), bundle), 'is Python 3.10.13, older than 3.11');
    assert.equal(unfitReason(python([2, 7, 18]), bundle), 'is Python 2.7.18, older than 3.11');
    assert.equal(
      unfitReason(python([3, 15, 0]), bundle),
      'is Python 3.15.0; this build of the extension carries Engram for Python 3.11 to 3.14',
    );
    assert.equal(unfitReason(python([3, 10, 14], { implementation: 'pypy' }), bundle), 'is pypy 3.10.14, not CPython');
    assert.match(unfitReason(python([3, 13, 0], { freeThreaded: true }), bundle) ?? '', /free-threaded/);
  });
  test('the range of Pythons, in order', () => {
    assert.equal(bundlePythons({ ...bundle, pythons: ['3.13', '3.11', '3.12'] }), '3.11 to 3.13');
    assert.equal(bundlePythons({ ...bundle, pythons: ['3.12'] }), '3.12');
  });

  test('the command: its Python folder first, the rg of the bundle first on PATH', () => {
    const cmd = bundledCommand(bundle, python([3, 12, 1]), 'INFO', { PATH: '/usr/bin:/bin' }, '/storage/pycache');
    assert.deepEqual(cmd, {
      command: '/usr/bin/python3',
      args: ['-P', '-m', 'engram_ls.lsp', '--log-level', 'INFO'],
      env: {
        PYTHONPATH: ['/ext/bundled/libs/cp312', '/ext/bundled/libs/common'].join(path.delimiter),
        PATH: ['/ext/bundled/libs/common/bin', '/usr/bin:/bin'].join(path.delimiter),
        PYTHONPYCACHEPREFIX: '/storage/pycache',
      },
    });
  });
  test("PATH keeps the environment's spelling (Path on Windows)", () => {
    const cmd = bundledCommand(bundle, python([3, 11, 9]), 'WARNING', { Path: 'C:\\Windows' });
    assert.deepEqual(Object.keys(cmd.env).sort(), ['PYTHONPATH', 'Path']);
  });

  test('a real Python on PATH answers the probe', async (t) => {
    const found = findExecutable('python3');
    if (!found) {
      t.skip('no python3 on PATH');
      return;
    }
    const info = await probePython(found);
    const expected = execFileSync(found, ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'], {
      encoding: 'utf8',
    }).trim();
    assert.equal(info.version.join('.'), expected);
    assert.equal(info.executable, found);
  });
  test('a program that is not a Python is refused with the reason', async () => {
    await assert.rejects(probePython(process.execPath), Error);
    await assert.rejects(probePython('/nonexistent/python3'), /ENOENT/);
  });
});

describe('ensureRg', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engram-rg-'));
    fs.mkdirSync(path.join(dir, 'common', 'bin'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'common', 'bin', 'rg'), '#!/bin/sh\n', { mode: 0o644 });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('an rg that lost its mode is made executable', () => {
    const b = { ...bundle, libs: dir };
    assert.equal(ensureRg(b, 'linux'), true);
    fs.accessSync(path.join(dir, 'common', 'bin', 'rg'), fs.constants.X_OK);
  });
  test('a missing rg', () => {
    assert.equal(ensureRg({ ...bundle, libs: path.join(dir, 'none') }, 'linux'), false);
  });
});
