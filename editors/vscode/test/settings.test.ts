import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  DEFAULTS,
  expandPath,
  findExecutable,
  missingServerMessage,
  readSettings,
  resolveServerCommand,
  type ServerCommand,
  startFailureMessage,
} from '../src/settings';

const getter = (values: Record<string, unknown>) => (key: string) => values[key];

describe('readSettings', () => {
  test('defaults when nothing is set', () => {
    const { settings, problems } = readSettings(getter({}));
    assert.deepEqual(settings, DEFAULTS);
    assert.deepEqual(problems, []);
  });

  test('a command list is kept as given', () => {
    const { settings } = readSettings(getter({ 'server.command': ['/opt/venv/bin/engram-ls', '--log-level', 'INFO'] }));
    assert.deepEqual(settings.serverCommand, ['/opt/venv/bin/engram-ls', '--log-level', 'INFO']);
  });

  test('a command string is one program, never split', () => {
    const { settings } = readSettings(getter({ 'server.command': ' /my tools/engram-ls ' }));
    assert.deepEqual(settings.serverCommand, ['/my tools/engram-ls']);
  });

  test('an empty command or first part means unset', () => {
    assert.deepEqual(readSettings(getter({ 'server.command': '' })).settings.serverCommand, []);
    assert.deepEqual(readSettings(getter({ 'server.command': ['', 'x'] })).settings.serverCommand, []);
  });

  test('bad types are reported and replaced by defaults', () => {
    const { settings, problems } = readSettings(
      getter({
        'server.command': [1, 2],
        'server.pythonPath': 3,
        'server.logLevel': 'LOUD',
        settings: ['x'],
      }),
    );
    assert.deepEqual(settings, DEFAULTS);
    assert.equal(problems.length, 4);
    assert.match(problems[0], /engram\.server\.command/);
    assert.match(problems[2], /logLevel/);
  });

  test('search mode: one of the five, else text with a problem', () => {
    assert.equal(readSettings(getter({ 'search.mode': 'regex' })).settings.searchMode, 'regex');
    const { settings, problems } = readSettings(getter({ 'search.mode': 'fuzzy' }));
    assert.equal(settings.searchMode, 'text');
    assert.deepEqual(problems, ['engram.search.mode must be one of text, literal, regex, semantic, hybrid; using text']);
  });

  test('log level is case-insensitive', () => {
    assert.equal(readSettings(getter({ 'server.logLevel': 'debug' })).settings.logLevel, 'DEBUG');
  });

  test('server settings are copied', () => {
    const source = { topic_keys: ['tags'], limits: { deadline_ms: 5000 } };
    const { settings } = readSettings(getter({ settings: source }));
    assert.deepEqual(settings.serverSettings, source);
    assert.notEqual(settings.serverSettings, source);
  });

  test('numbers are clamped and rounded', () => {
    const { settings } = readSettings(getter({ 'search.limit': 5000, 'search.debounceMs': -3.2 }));
    assert.equal(settings.searchLimit, 1000);
    assert.equal(settings.debounceMs, 0);
    assert.equal(readSettings(getter({ 'search.limit': 'ten' })).settings.searchLimit, 50);
    assert.equal(readSettings(getter({ 'search.limit': 20.4 })).settings.searchLimit, 20);
  });
});

describe('expandPath', () => {
  const ctx = { home: '/home/me', workspaceFolder: '/srv/notes' };
  test('tilde', () => assert.equal(expandPath('~/venv/bin/engram-ls', ctx), '/home/me/venv/bin/engram-ls'));
  test('tilde alone', () => assert.equal(expandPath('~', ctx), '/home/me'));
  test('tilde inside is literal', () => assert.equal(expandPath('/a/~/b', ctx), '/a/~/b'));
  test('variables', () =>
    assert.equal(expandPath('${workspaceFolder}/.venv/bin/python', ctx), '/srv/notes/.venv/bin/python'));
  test('userHome', () => assert.equal(expandPath('${userHome}/x', ctx), '/home/me/x'));
  test('no folder leaves the variable', () =>
    assert.equal(expandPath('${workspaceFolder}/x', { home: '/h' }), '${workspaceFolder}/x'));
});

describe('resolveServerCommand', () => {
  const ctx = { home: '/home/me', workspaceFolder: '/srv/notes' };
  const base = readSettings(getter({})).settings;

  test('default: engram-ls on PATH', () => {
    assert.deepEqual(resolveServerCommand(base, ctx), {
      command: 'engram-ls',
      args: ['--log-level', 'WARNING'],
      source: 'default',
    });
  });

  test('pythonPath runs the module', () => {
    const settings = { ...base, pythonPath: '${workspaceFolder}/.venv/bin/python', logLevel: 'DEBUG' as const };
    assert.deepEqual(resolveServerCommand(settings, ctx), {
      command: '/srv/notes/.venv/bin/python',
      args: ['-m', 'engram_ls.lsp', '--log-level', 'DEBUG'],
      source: 'engram.server.pythonPath',
    });
  });

  test('command wins over pythonPath, arguments kept', () => {
    const settings = { ...base, pythonPath: '/usr/bin/python3', serverCommand: ['~/bin/engram', 'lsp'] };
    assert.deepEqual(resolveServerCommand(settings, ctx), {
      command: '/home/me/bin/engram',
      args: ['lsp', '--log-level', 'WARNING'],
      source: 'engram.server.command',
    });
  });
});

describe('findExecutable and messages', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engram-settings-'));
    fs.writeFileSync(path.join(dir, 'engram-ls'), '#!/bin/sh\n', { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'not-exec'), '', { mode: 0o644 });
    fs.mkdirSync(path.join(dir, 'folder'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('found on PATH', () => {
    assert.equal(findExecutable('engram-ls', { PATH: `/nonexistent:${dir}` }, 'linux'), path.join(dir, 'engram-ls'));
  });
  test('absolute paths are checked as they are', () => {
    assert.equal(findExecutable(path.join(dir, 'engram-ls'), { PATH: '' }, 'linux'), path.join(dir, 'engram-ls'));
    assert.equal(findExecutable(path.join(dir, 'not-exec'), { PATH: '' }, 'linux'), undefined);
    assert.equal(findExecutable(path.join(dir, 'folder'), { PATH: '' }, 'linux'), undefined);
  });
  test('missing', () => {
    assert.equal(findExecutable('engram-ls', { PATH: '/nonexistent' }, 'linux'), undefined);
    assert.equal(findExecutable('engram-ls', {}, 'linux'), undefined);
  });

  test('no message when the program exists', () => {
    const server = { command: 'engram-ls', args: [], source: 'default' as const };
    assert.equal(missingServerMessage(server, () => true), undefined);
  });
  test('each source names its setting and the fix, never a pip install that cannot work', () => {
    const cases: Array<[ServerCommand, boolean, RegExp]> = [
      [{ command: 'engram-ls', args: [], source: 'default' }, false, /carries no language server, and "engram-ls" was not found on PATH/],
      [{ command: '/x/engram-ls', args: [], source: 'engram.server.command' }, false, /engram\.server\.command\) does not exist/],
      [{ command: '/x/engram-ls', args: [], source: 'engram.server.command' }, true, /clear it to use the server this extension carries/],
      [{ command: '/x/python', args: [], source: 'engram.server.pythonPath' }, false, /Python interpreter "\/x\/python"/],
    ];
    for (const [server, bundled, pattern] of cases) {
      const message = missingServerMessage(server, () => false, bundled) ?? '';
      assert.match(message, pattern);
      assert.doesNotMatch(message, /pip install engram-ls/);
      if (!bundled) {
        assert.match(message, /\.vsix built for your platform/);
        assert.match(message, /"engram\.server\.command" to its engram-ls/);
      }
    }
  });
  test('start failure with a Python says how to install Engram there from the repository', () => {
    const message = startFailureMessage(
      { command: '/x/python', args: ['-m', 'engram_ls.lsp'], source: 'engram.server.pythonPath' },
      new Error('Connection closed'),
    );
    assert.match(message, /\/x\/python -m engram_ls\.lsp/);
    assert.match(message, /Connection closed/);
    assert.match(message, /"\/x\/python -m pip install \.\/engram"/);
    assert.doesNotMatch(message, /pip install engram-ls/);
  });
  test('start failure of the bundled server names it', () => {
    const message = startFailureMessage(
      { command: '/usr/bin/python3', args: ['-P', '-m', 'engram_ls.lsp'], source: 'bundled', description: 'Engram 0.1.0 (bundled), Python 3.12.1 (/usr/bin/python3)' },
      new Error('Connection closed'),
    );
    assert.match(message, /could not start: Connection closed\. This is the server the extension carries \(Engram 0\.1\.0 \(bundled\), Python 3\.12\.1/);
  });
});
