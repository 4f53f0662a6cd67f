#!/usr/bin/env node
// End-to-end test of the extension in a real VS Code: code-server (VS Code in the browser)
// driven by headless Chromium through playwright-core.
//
//   node e2e/run.mjs --vsix dist/engram-linux-x64.vsix [--server /path/to/engram-ls]
//                    [--vault ../../examples/vault] [--artifacts e2e/artifacts]
//                    [--code-server .e2e/code-server/node_modules/.bin/code-server]
//                    [--chromium /usr/bin/chromium] [--timeout 150]
//
// Copies the vault to a temporary folder, installs the .vsix (built with its server,
// scripts/package_vscode.sh) into a fresh extensions folder, starts code-server on a free
// 127.0.0.1 port from a fresh user-data folder, without this shell's Python variables and
// with no folder holding engram-ls on PATH (VS Code may take PATH from a login shell: what the
// extension saw is checked), and Chromium on a fresh profile, then checks:
//   0. the server runs from the bundle: python3 from the extension host's PATH (which holds no
//      engram-ls, and whose python3 cannot import Engram) as `python3 -P -m engram_ls.lsp`,
//      PYTHONPATH inside the installed extension, its rg executable and first on PATH;
//   1. the status bar shows the index as ready with the vault's note count;
//   2. frontmatter topic completion offers a vault topic;
//   3. "Engram: Search Notes" lists the notes of a tag + date filter, shows a server error
//      in the picker, and opens the chosen note; the picker's mode button and `mode:` terms
//      change what the server answers (`colou?r` as text, literal and regex), a semantic
//      search shows the server's answer, and `engram.search.mode` applies without a restart;
//   3b. "Engram: Related Notes" on a note lists its related notes (or the server's error);
//   3c. "Engram: Run Base View" on bases/work.base offers its views and shows the chosen one
//      as a read-only Markdown table beside it, its rows linked to their notes;
//   3d. the Explorer's Tasks view lists the open tasks by due day ("Overdue" holds "Ship the VS
//      Code extension"), a click opens the task's note at its line, and "Toggle Task" (in the
//      context menu, and the inline action) marks "Measure the rename…" done on disk (the CRLF
//      note keeps its line endings) and "Ship…" done in its open editor (saved); the view then
//      lists them no more;
//   4. "Engram: Show Index Status" lists the vault; its Reindex restarts engram-ls (new pid);
//   5. a workspace setting `engram.server.command` naming --server runs that program instead
//      of the bundle; one naming a missing program restarts the client, shows the error with
//      its fix and "not running" (the Tasks view: one row with the message); so does
//      `engram.server.pythonPath` naming a missing Python; removing them brings the bundled
//      server back to ready (and the Tasks view its tasks);
//   6. with semantic search turned off (engram.settings), a semantic search shows the
//      server's ENGRAM_UNSUPPORTED_MODE message in the picker;
//   7. the build's work-done progress reached the extension (its log has begin and end).
// Writes result.json and screenshots into the artifacts folder; exit status 0 when all pass.
// Every process it starts is killed (by process group) before it exits.

import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { sessionProcs } from './procs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const extDir = path.resolve(here, '..');

function parseArgs(argv) {
  const opts = {
    vsix: '',
    server: process.env.ENGRAM_LS ?? '',
    vault: path.resolve(extDir, '..', '..', 'examples', 'vault'),
    artifacts: path.join(here, 'artifacts'),
    codeServer: path.join(extDir, '.e2e', 'code-server', 'node_modules', '.bin', 'code-server'),
    chromium: '/usr/bin/chromium',
    timeout: 150,
  };
  const names = { '--code-server': 'codeServer' };
  for (let i = 2; i < argv.length; i += 2) {
    const key = names[argv[i]] ?? argv[i].replace(/^--/, '');
    if (!(key in opts) || argv[i + 1] === undefined) {
      throw new Error(`unknown or incomplete option ${argv[i]}`);
    }
    opts[key] = key === 'timeout' ? Number(argv[i + 1]) : path.resolve(argv[i + 1]);
  }
  return opts;
}

const opts = parseArgs(process.argv);
const started = Date.now();
const log = (msg) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);
const children = [];
const result = { ok: false, checks: {}, screenshots: [], errors: [], artifacts: opts.artifacts };

// The vault's ground truth (examples/EXAMPLE_VAULT.md).
const EXPECTED_NOTES = 31;
const TAG_QUERY = '#sqlite after:2024-01-01 before:2024-12-31';
const TAG_QUERY_TITLES = ['FTS5 cheat sheet', 'Kickoff', 'Performance sync', 'Search service', 'SQLite review'];

function requireFile(file, what, hint) {
  if (!fs.existsSync(file)) {
    throw new Error(`${what} not found at ${file}: ${hint}`);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Start a process in its own process group, its output appended to a log file. */
function startProcess(name, command, args, env = process.env) {
  const out = fs.openSync(path.join(opts.artifacts, `${name}.log`), 'w');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], env });
  fs.closeSync(out);
  children.push({ name, child });
  log(`started ${name} (pid ${child.pid})`);
  return child;
}

async function killAll() {
  for (const { name, child } of children.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) {
      continue;
    }
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      continue;
    }
    const timedOut = await Promise.race([exited.then(() => false), sleep(3000).then(() => true)]);
    if (timedOut) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }
    log(`stopped ${name} (pid ${child.pid})`);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what, fn, timeoutMs, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) {
        return value;
      }
    } catch (error) {
      last = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${last.message})` : ''}`);
}

async function httpOk(url) {
  try {
    const res = await fetch(url);
    return res.ok;
  } catch {
    return false;
  }
}

function prepare(tmp) {
  const vault = path.join(tmp, 'vault');
  fs.cpSync(opts.vault, vault, { recursive: true });
  // Only the config file: a fresh index is built by the server.
  for (const name of fs.readdirSync(path.join(vault, '.engram'))) {
    if (name !== 'config.yaml') {
      fs.rmSync(path.join(vault, '.engram', name), { recursive: true, force: true });
    }
  }
  const userData = path.join(tmp, 'user-data');
  const extensions = path.join(tmp, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.mkdirSync(extensions);
  // No engram.server.command: the extension runs the server it carries.
  const settings = {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'git.enabled': false,
    'chat.commandCenter.enabled': false,
    'editor.quickSuggestionsDelay': 10,
    // VS Code in a browser saves after a delay by default: keep the completion check unsaved.
    'files.autoSave': 'off',
    'window.restoreWindows': 'none',
  };
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  return { vault, userData, extensions };
}

const holdsEngramLs = (dir) => dir !== '' && fs.existsSync(path.join(dir, 'engram-ls'));

/** The environment code-server runs in: without this shell's Python variables, and without
 * the folders of PATH that hold an engram-ls (a virtual environment's bin). */
function cleanEnv() {
  const env = { ...process.env, VSCODE_PROXY_URI: '', SHELL: '/bin/sh' };
  for (const key of ['PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV', 'CONDA_PREFIX', 'ENGRAM_LS']) {
    delete env[key];
  }
  env.PATH = (env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !holdsEngramLs(dir))
    .join(path.delimiter);
  return env;
}

/** Where `name` is on `searchPath`, or undefined. */
function which(name, searchPath) {
  for (const dir of searchPath.split(path.delimiter)) {
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {}
  }
  return undefined;
}

async function shot(page, name) {
  const file = path.join(opts.artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  result.screenshots.push(file);
  log(`screenshot ${file}`);
}

async function statusBarTexts(page) {
  return page.locator('.part.statusbar .statusbar-item').allInnerTexts();
}

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 10000 });
  await page.keyboard.press('Enter');
}

async function quickPickRows(page) {
  return page
    .locator('.quick-input-widget .quick-input-list .monaco-list-row')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('aria-label') ?? row.textContent ?? ''));
}

async function checkStatusBar(page) {
  const text = await waitFor(
    'the status bar to show "Engram: ready"',
    async () => (await statusBarTexts(page)).find((t) => /Engram: ready/.test(t)),
    60000,
  );
  const notes = Number(/(\d+) notes?/.exec(text)?.[1]);
  result.checks.statusBar = { text, notes };
  if (notes !== EXPECTED_NOTES) {
    throw new Error(`status bar shows ${notes} notes, the vault has ${EXPECTED_NOTES}: "${text}"`);
  }
  log(`status bar: ${text}`);
  await shot(page, '01-status-ready');
}

async function openFile(page, relPath) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(relPath);
  const name = path.basename(relPath);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 10000 });
  await page.keyboard.press('Enter');
  await page.locator('.tabs-container .tab.active', { hasText: name }).waitFor({ timeout: 10000 });
  await page.locator('.editor-instance .monaco-editor textarea').first().waitFor({ state: 'attached', timeout: 10000 });
}

async function checkCompletion(page) {
  // reference/profiling.md line 3 is `tags: [performance, memory]`; column 27 is the `]`.
  await openFile(page, 'reference/profiling.md');
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(':3:27');
  await page.keyboard.press('Enter');
  await page.keyboard.type(', sq', { delay: 30 });
  const rowsLocator = page.locator('.editor-widget.suggest-widget.visible .monaco-list-row');
  const labels = await waitFor(
    'the completion list to offer "sqlite"',
    async () => {
      const visible = await rowsLocator.count();
      if (visible === 0) {
        await page.keyboard.press('Control+Space');
        await sleep(500);
        return undefined;
      }
      const all = await rowsLocator.evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
      return all.some((label) => /\bsqlite\b/i.test(label)) ? all : undefined;
    },
    20000,
    300,
  );
  result.checks.completion = { file: 'reference/profiling.md', typed: ', sq', items: labels };
  log(`completion items: ${labels.join(' | ')}`);
  await shot(page, '02-frontmatter-completion');
  await page.keyboard.press('Escape');
  // Leave the note as it was.
  await runCommand(page, 'File: Revert File');
}

async function checkSearch(page) {
  await runCommand(page, 'Engram: Search Notes');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await page.locator('.quick-input-widget .quick-input-title', { hasText: 'Engram' }).waitFor({ timeout: 10000 });

  // A bad date: the server's -32602 error is shown in the picker, not thrown.
  await input.fill('after:2024-13-01');
  const errorTitle = await waitFor(
    'the picker to show the server error',
    async () => {
      const title = await page.locator('.quick-input-widget .quick-input-title').innerText();
      return /ENGRAM_INVALID_REQUEST/.test(title) ? title : undefined;
    },
    15000,
  );
  log(`error shown: ${errorTitle}`);
  await shot(page, '03-search-error');

  await input.fill(TAG_QUERY);
  const rows = await waitFor(
    `results for "${TAG_QUERY}"`,
    async () => {
      const title = await page.locator('.quick-input-widget .quick-input-title').innerText();
      if (!/Engram: \d+ notes?/.test(title)) {
        return undefined;
      }
      const labels = await quickPickRows(page);
      return labels.length >= TAG_QUERY_TITLES.length ? { title, labels } : undefined;
    },
    20000,
  );
  const titles = TAG_QUERY_TITLES.filter((t) => rows.labels.some((label) => label.startsWith(t)));
  result.checks.search = { query: TAG_QUERY, title: rows.title, rows: rows.labels, error: errorTitle };
  log(`search "${TAG_QUERY}": ${rows.title}\n  ${rows.labels.join('\n  ')}`);
  await shot(page, '04-search-results');
  if (rows.labels.length !== TAG_QUERY_TITLES.length || titles.length !== TAG_QUERY_TITLES.length) {
    throw new Error(`expected exactly ${TAG_QUERY_TITLES.join(', ')}; got: ${rows.labels.join(' | ')}`);
  }

  // Open the first hit: its note becomes the active editor.
  const first = rows.labels[0];
  await page.keyboard.press('Enter');
  const tab = await waitFor(
    'the chosen note to open',
    async () => {
      const active = await page.locator('.tabs-container .tab.active').first().innerText();
      return active && !/profiling/.test(active) ? active : undefined;
    },
    10000,
  );
  result.checks.search.opened = { row: first, tab: tab.trim() };
  log(`opened: ${tab.trim()}`);
  await shot(page, '05-search-opened');
}

/** The picker's title once it ends with `suffix` (a regex source) and the picker is idle. */
async function pickerTitle(page, pattern, what) {
  return waitFor(
    what,
    async () => {
      const title = await page.locator('.quick-input-widget .quick-input-title').innerText();
      return new RegExp(pattern).test(title) ? title : undefined;
    },
    20000,
  );
}

/** Type a query into the open search picker; wait for a title matching `pattern`. */
async function searchFor(page, value, pattern) {
  await page.locator('.quick-input-widget .quick-input-box input').fill(value);
  const title = await pickerTitle(page, pattern, `the picker's title to match /${pattern}/ for "${value}"`);
  return { value, title, rows: await quickPickRows(page) };
}

function clickModeButton(page) {
  return page
    .locator('.quick-input-widget .quick-input-titlebar')
    .locator('[aria-label^="Search mode"], [title^="Search mode"]')
    .first()
    .click();
}

// reference/editor-setup.md (title "Editor setup") is the one note with "colour".
const COLOUR_TITLE = 'Editor setup';

async function checkSearchModes(page, vault) {
  const modes = {};
  await runCommand(page, 'Engram: Search Notes');
  modes.opened = await pickerTitle(page, '^Engram: Search Notes · text mode$', 'the picker in text mode');
  modes.text = await searchFor(page, 'colou?r', '^Engram: no notes match · text mode$');
  await clickModeButton(page);
  modes.literalButton = await pickerTitle(page, '^Engram: no notes match · literal mode$', 'literal mode after one click');
  await clickModeButton(page);
  const regexTitle = await pickerTitle(page, '^Engram: 1 note · regex mode$', 'regex mode after two clicks');
  modes.regexButton = { title: regexTitle, rows: await quickPickRows(page) };
  await shot(page, '05b-search-regex-mode');
  // A term overrides the picker's mode (regex now).
  modes.override = await searchFor(page, 'mode:text colou?r', '^Engram: no notes match · text mode$');
  modes.literal = await searchFor(page, 'mode:literal colour', '^Engram: 1 note · literal mode$');
  // Semantic: whatever the server answers (its error, or results), shown in the picker.
  modes.semantic = await searchFor(page, 'mode:semantic memory leak', '· semantic mode$');
  await shot(page, '05c-search-semantic');
  await page.keyboard.press('Escape');

  // engram.search.mode, changed in the workspace settings: the next picker starts in it, and
  // the server is not restarted.
  const pidsBefore = serverPids();
  const dir = path.join(vault, '.vscode');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ 'engram.search.mode': 'regex' }, null, 2));
  modes.setting = await waitFor(
    'a new picker to start in regex mode after the setting changed',
    async () => {
      await runCommand(page, 'Engram: Search Notes');
      try {
        await pickerTitle(page, '· regex mode$', 'regex mode');
        return await searchFor(page, 'colou?r', '^Engram: 1 note · regex mode$');
      } catch {
        await page.keyboard.press('Escape');
        return undefined;
      }
    },
    30000,
    500,
  );
  await page.keyboard.press('Escape');
  fs.rmSync(dir, { recursive: true, force: true });
  modes.setting.serverPidsBefore = pidsBefore;
  modes.setting.serverPidsAfter = serverPids();
  result.checks.modes = modes;
  log(`search modes: ${JSON.stringify(modes)}`);
  const colour = (rows) => rows.length === 1 && rows[0].startsWith(COLOUR_TITLE);
  if (!colour(modes.regexButton.rows) || !colour(modes.literal.rows) || !colour(modes.setting.rows)) {
    throw new Error(`expected only "${COLOUR_TITLE}" for the regex and the literal: ${JSON.stringify(modes)}`);
  }
  if (pidsBefore.join() !== modes.setting.serverPidsAfter.join()) {
    throw new Error(`engram.search.mode restarted the server: ${pidsBefore} -> ${modes.setting.serverPidsAfter}`);
  }
  // Leave the picker's default as it was before the next checks (the file is gone).
  await waitFor(
    'a new picker to start in text mode again',
    async () => {
      await runCommand(page, 'Engram: Search Notes');
      // The title is set once the picker is up (blank for a moment): wait for its mode.
      const title = await pickerTitle(page, ' · \\w+ mode$', 'the picker to name its mode').catch(() => '');
      await page.keyboard.press('Escape');
      return / · text mode$/.test(title);
    },
    30000,
    500,
  );
}

async function checkRelated(page) {
  // The mode button clicks left the mouse over the title bar (a hover there takes keys).
  await page.mouse.move(700, 600);
  const tab = page.locator('.tabs-container .tab', { hasText: 'profiling.md' }).first();
  if ((await tab.count()) > 0) {
    await tab.click();
    await page.locator('.tabs-container .tab.active', { hasText: 'profiling.md' }).waitFor({ timeout: 10000 });
  } else {
    await openFile(page, 'reference/profiling.md');
  }
  await runCommand(page, 'Engram: Related Notes');
  const related = await waitFor(
    'the related notes picker or an error message',
    async () => {
      const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
      const error = toasts.find((t) => /Engram: related notes/.test(t));
      if (error) {
        return { error: error.replace(/\s+/g, ' ').trim() };
      }
      const title = await page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '');
      if (/^Engram: \d+ notes? related to /.test(title)) {
        const rows = await page
          .locator('.quick-input-widget .quick-input-list .monaco-list-row')
          .evaluateAll((els) => els.map((row) => ({ aria: row.getAttribute('aria-label') ?? '', text: row.textContent ?? '' })));
        return { title, rows };
      }
      return undefined;
    },
    20000,
  );
  await shot(page, '05d-related');
  result.checks.related = related;
  log(`related: ${JSON.stringify(related)}`);
  if (related.rows) {
    const hunt = related.rows.findIndex((r) => r.aria.startsWith('Hunting the watcher memory leak'));
    if (hunt >= 0) {
      // Open it: the note becomes the active editor.
      await page.locator('.quick-input-widget .quick-input-box input').fill('Hunting');
      await page.keyboard.press('Enter');
      related.opened = (
        await waitFor(
          'the chosen related note to open',
          async () => {
            const active = await page.locator('.tabs-container .tab.active').first().innerText();
            return /memory-leak-hunt/.test(active) ? active : undefined;
          },
          10000,
        )
      ).trim();
    }
    await page.keyboard.press('Escape');
  } else {
    // Close the error toast so it does not hide later checks.
    await page.keyboard.press('Escape');
  }
}

async function checkCodeLens(page) {
  // reference/profiling.md: indexer-rewrite.md and memory-leak-hunt.md link to it. The lens
  // on its title line says so; clicking it opens the references peek on those links.
  await page.mouse.move(700, 600);
  const tab = page.locator('.tabs-container .tab', { hasText: 'profiling.md' }).first();
  if ((await tab.count()) > 0) {
    await tab.click();
    await page.locator('.tabs-container .tab.active', { hasText: 'profiling.md' }).waitFor({ timeout: 10000 });
  } else {
    await openFile(page, 'reference/profiling.md');
  }
  const lenses = await waitFor(
    'the backlinks code lens on reference/profiling.md',
    async () => {
      const texts = await page.locator('.editor-instance .codelens-decoration').allInnerTexts();
      return texts.some((t) => /\d+ backlinks?/.test(t)) ? texts : undefined;
    },
    30000,
  );
  const link = page.locator('.editor-instance .codelens-decoration a', { hasText: /backlinks?/ }).first();
  await link.click();
  const peek = await waitFor(
    'the references peek of the backlinks',
    async () => {
      const rows = await page.locator('.peekview-widget .ref-tree .monaco-list-row').allInnerTexts();
      return rows.length > 0 ? rows.map((r) => r.replace(/\s+/g, ' ').trim()) : undefined;
    },
    20000,
  );
  await shot(page, '05e-code-lens');
  await page.keyboard.press('Escape');
  result.checks.codeLens = { lenses, peek };
  log(`code lens: ${JSON.stringify(result.checks.codeLens)}`);
}

async function checkBase(page) {
  // bases/work.base has three views: the picker offers them; the second opens as a read-only
  // Markdown document beside the base, its rows linked to their notes.
  await page.mouse.move(700, 600);
  await openFile(page, 'bases/work.base');
  await runCommand(page, 'Engram: Run Base View');
  const views = await waitFor(
    'the picker of the base\'s views',
    async () => {
      const title = await page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '');
      if (!/^Engram: views of bases\/work\.base/.test(title)) {
        return undefined;
      }
      const rows = await quickPickRows(page);
      return rows.length === 3 ? rows : undefined;
    },
    20000,
  );
  await page.locator('.quick-input-widget .quick-input-box input').fill('By status');
  await page.keyboard.press('Enter');
  const tabName = 'work.base · By status.md';
  await page.locator('.tabs-container .tab.active', { hasText: tabName }).waitFor({ timeout: 20000 });
  // The editor's text as rendered (spaces as no-break spaces, long lines wrapped).
  const shown = async () =>
    (
      await page
        .locator('.editor-group-container.active .monaco-editor .view-lines')
        .first()
        .innerText()
        .catch(() => '')
    ).replace(/\u00a0/g, ' ');
  const text = await waitFor(
    'the view\'s table in the editor',
    async () => {
      const lines = await shown();
      return /Average: 4\.25/.test(lines) ? lines : undefined;
    },
    15000,
  );
  // Typing into it changes nothing: a document of its provider is read-only.
  await page.keyboard.type('x');
  await sleep(300);
  const after = await shown();
  result.checks.base = { views, tab: tabName, text, readOnly: after === text };
  log(`base view: ${JSON.stringify(result.checks.base)}`);
  await shot(page, '05e-base-view');
  if (!/# bases\/work\.base · By status/.test(text) || !/\| \*\*doing\*\*/.test(text)) {
    throw new Error(`the view's document does not hold the grouped table: ${text}`);
  }
  if (!/\[lsp-server\.md\]\(<file:\/\//.test(text)) {
    throw new Error(`the rows do not link to their notes: ${text}`);
  }
  if (after !== text) {
    throw new Error('the view\'s document took an edit');
  }
}

// The vault's open tasks (examples/vault): every due day is in the past, so they are overdue.
const TASK_SHIP = 'Ship the VS Code extension #editor';
const TASK_MEASURE = 'Measure the rename of a folder with 1,000 notes; target below 0.3 s. #benchmark';
const MEASURE_NOTE = 'meetings/2024/2024-11-04 perf sync.md';
const MEASURE_LINE = 27;
const TASK_JOURNAL = "Check the agent server's memory again next month";

/** The Explorer's Tasks pane. */
function tasksPane(page) {
  return page.locator('.pane', { has: page.locator('.pane-header h3.title', { hasText: /^Tasks$/ }) }).first();
}

/** The rows of the Tasks view on screen: groups (level 1) and tasks (level 2), in order. */
async function taskRows(page) {
  return tasksPane(page)
    .locator('.monaco-list-row')
    .evaluateAll((rows) =>
      rows
        .map((row) => ({
          index: Number(row.getAttribute('data-index')),
          level: Number(row.getAttribute('aria-level')),
          label: (row.querySelector('.label-name')?.textContent ?? '').replace(/\u00a0/g, ' ').trim(),
          description: (row.querySelector('.label-description')?.textContent ?? '').replace(/\u00a0/g, ' ').trim(),
        }))
        .sort((a, b) => a.index - b.index),
    );
}

/** The task labels under the group whose label starts with `title`. */
function groupTasks(rows, title) {
  const at = rows.findIndex((r) => r.level === 1 && r.label.startsWith(`${title} (`));
  if (at < 0) {
    return undefined;
  }
  const end = rows.findIndex((r, i) => i > at && r.level === 1);
  return rows.slice(at + 1, end < 0 ? undefined : end).map((r) => r.label);
}

/** Whether the group whose label starts with `title` lists as many tasks as its label counts. */
function groupComplete(rows, title) {
  const header = rows.find((r) => r.level === 1 && r.label.startsWith(`${title} (`));
  const count = header && /\((\d+)\)$/.exec(header.label);
  return Boolean(count) && groupTasks(rows, title).length === Number(count[1]);
}

/** The Explorer's pane of the folder's files (collapsed to give the Tasks view room). */
function foldersHeader(page) {
  return page.locator('.explorer-viewlet .pane-header', { hasText: /^vault/i }).first();
}

/**
 * Toggle the task `label` of the Tasks view (its context menu's "Toggle Task", or its inline
 * action), then wait for `relPath`'s line `line` to start with `prefix` on disk, the view to
 * list the task no more and the extension to log the toggle. What was written and where.
 */
async function toggleInView(page, vault, { label, relPath, line, prefix, via }) {
  const pane = tasksPane(page);
  const row = pane.locator('.monaco-list-row', { hasText: label }).first();
  let menu;
  if (via === 'context menu') {
    await row.click({ button: 'right' });
    const items = page.locator('.context-view .monaco-menu .action-label');
    await items.first().waitFor({ timeout: 10000 });
    menu = (await items.allInnerTexts()).map((t) => t.trim()).filter(Boolean);
    if (!menu.includes('Toggle Task')) {
      await page.keyboard.press('Escape');
      throw new Error(`the task's context menu has no "Toggle Task": ${menu.join(' | ')}`);
    }
    const item = page.locator('.context-view .monaco-menu .action-label', { hasText: 'Toggle Task' }).first();
    await item.click();
    // A click that lands while the menu still animates in only focuses the item (seen under
    // load: the menu stays open): the focused item then takes Enter.
    await page.waitForTimeout(500);
    if (await item.isVisible().catch(() => false)) {
      await item.hover();
      await page.keyboard.press('Enter');
    }
  } else {
    // A tooltip of the row the mouse rested on can cover this one (then a hover never lands):
    // move to an empty spot of the activity bar until it is gone.
    await page.mouse.move(5, 450);
    await page.locator('.context-view .hover-contents').waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
    await row.hover();
    const inline = row.locator('.actions .action-label[aria-label="Toggle Task"]');
    await inline.waitFor({ state: 'visible', timeout: 10000 });
    await inline.click();
  }
  const file = path.join(vault, relPath);
  const written = await waitFor(
    `${relPath}:${line} to start with "${prefix}" on disk`,
    () => {
      const text = fs.readFileSync(file, 'utf8').split('\n')[line - 1];
      return text.startsWith(prefix) ? text : undefined;
    },
    15000,
  );
  const after = await waitFor(
    `the Tasks view to list "${label}" no more`,
    async () => {
      const rows = await taskRows(page);
      // The group's rows may render after its header (seen under load: "Overdue (2)" over
      // no rows): wait until the rows under it are as many as its label counts.
      return rows.length > 0 && !rows.some((r) => r.label === label) && groupComplete(rows, 'Overdue') ? rows : undefined;
    },
    15000,
  );
  const engramLog = findFile(path.join(path.dirname(vault), 'user-data', 'logs'), 'Engram.log');
  const place = `${relPath}:${line} marked done`;
  const logged = await waitFor(
    `the toggle of ${relPath}:${line} in the Engram log`,
    () => {
      const text = engramLog && fs.existsSync(engramLog) ? fs.readFileSync(engramLog, 'utf8') : '';
      return text.split('\n').find((l) => l.includes(`Tasks: ${place}`));
    },
    10000,
  ).catch(() => '');
  return {
    path: relPath,
    line,
    via,
    ...(menu ? { contextMenu: menu } : {}),
    text: written.replace(/\r$/, ''),
    crlf: written.endsWith('\r'),
    log: logged.replace(/^.*?Tasks: /, ''),
    groupsAfter: after.filter((r) => r.level === 1).map((r) => r.label),
    overdueAfter: groupTasks(after, 'Overdue'),
  };
}

async function checkTasks(page, vault) {
  // The Tasks view in the Explorer: the vault's open tasks by due day.
  await page.mouse.move(700, 600);
  await runCommand(page, 'View: Close All Editors');
  await runCommand(page, 'Focus on Tasks View');
  const pane = tasksPane(page);
  await pane.waitFor({ timeout: 10000 });
  const folders = foldersHeader(page);
  if ((await folders.getAttribute('aria-expanded')) === 'true') {
    await folders.click();
  }
  const listed = await waitFor(
    `the Tasks view to list "${TASK_SHIP}" as overdue`,
    async () => {
      const rows = await taskRows(page);
      return groupTasks(rows, 'Overdue')?.includes(TASK_SHIP) ? rows : undefined;
    },
    30000,
  );
  const tasks = {
    groups: listed.filter((r) => r.level === 1).map((r) => r.label),
    overdue: groupTasks(listed, 'Overdue'),
    rows: listed,
    header: (await pane.locator('.pane-header').first().getAttribute('aria-label')) ?? '',
  };
  result.checks.tasks = tasks;
  await shot(page, '05f-tasks-view');

  // A click opens the note at the task's line.
  await pane.locator('.monaco-list-row', { hasText: TASK_SHIP }).first().click();
  await page.locator('.tabs-container .tab.active', { hasText: '2025-01-20 roadmap.md' }).waitFor({ timeout: 10000 });
  const cursor = await waitFor(
    'the cursor on the task\'s line',
    async () => (await statusBarTexts(page)).find((t) => /Ln \d+, Col \d+/.test(t)),
    10000,
  );
  tasks.opened = { tab: '2025-01-20 roadmap.md', cursor: cursor.trim() };
  if (!/Ln 17, Col 1\b/.test(cursor)) {
    throw new Error(`the task's note opened at ${cursor}, not line 17`);
  }

  // "Toggle Task" from the context menu: the CRLF note on disk (or, when an earlier check
  // opened it and VS Code still holds it, its buffer, then saved).
  tasks.toggled = await toggleInView(page, vault, {
    label: TASK_MEASURE,
    relPath: MEASURE_NOTE,
    line: MEASURE_LINE,
    prefix: '- [x] Measure',
    via: 'context menu',
  });
  await shot(page, '05g-tasks-toggled');
  // The inline action, on a note no check opens: the server writes the file.
  tasks.toggledOnDisk = await toggleInView(page, vault, {
    label: TASK_JOURNAL,
    relPath: 'journal/2026-02-14.md',
    line: 11,
    prefix: '- [x] Check the agent',
    via: 'inline',
  });
  // The inline action, on the note open (and saved) in the editor: the server edits its
  // buffer, which the extension saves, so the file and the view agree.
  tasks.toggledOpen = await toggleInView(page, vault, {
    label: TASK_SHIP,
    relPath: 'meetings/2025/2025-01-20 roadmap.md',
    line: 17,
    prefix: '- [x] Ship the VS Code extension',
    via: 'inline',
  });
  tasks.toggledOpen.dirty = (await page.locator('.tabs-container .tab.active.dirty').count()) > 0;
  tasks.toggledOpen.editor = (
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().innerText()
  )
    .replace(/\u00a0/g, ' ')
    .includes('- [x] Ship the VS Code extension');
  log(`tasks view: ${JSON.stringify(tasks)}`);
  await shot(page, '05h-tasks-toggled-open-note');
  if ((await folders.getAttribute('aria-expanded')) === 'false') {
    await folders.click();
  }
}

/** The bundled server's module argument (`python -P -m engram_ls.lsp`). */
const SERVER_MODULE = 'engram_ls.lsp';

/** The engram-ls processes started under code-server (its session: spawned detached): the
 * bundled server, or --server. */
function serverProcs() {
  const cs = children.find((c) => c.name === 'code-server')?.child;
  if (!cs) {
    return [];
  }
  return sessionProcs(cs.pid, [SERVER_MODULE, opts.server]);
}

function serverPids() {
  return serverProcs().map((p) => p.pid);
}

/** The one bundled server running, once it is the only server process. */
function bundledProc() {
  const procs = serverProcs();
  return procs.length === 1 && procs[0].argv.includes(SERVER_MODULE) ? procs[0] : undefined;
}

async function checkBundled(extensions) {
  const proc = await waitFor('the bundled server process', () => bundledProc(), 30000);
  const dirs = fs.readdirSync(extensions).filter((name) => name.startsWith('engram.engram-'));
  if (dirs.length !== 1) {
    throw new Error(`expected one installed Engram extension in ${extensions}: ${dirs.join(', ')}`);
  }
  const installed = path.join(extensions, dirs[0]);
  const pythonPath = (proc.env.PYTHONPATH ?? '').split(path.delimiter);
  const rg = path.join(installed, 'bundled', 'libs', 'common', 'bin', 'rg');
  let rgExecutable = true;
  try {
    fs.accessSync(rg, fs.constants.X_OK);
  } catch {
    rgExecutable = false;
  }
  // The extension host's PATH as the server got it (the bundle's bin put first).
  const [first, ...rest] = (proc.env.PATH ?? '').split(path.delimiter);
  const hostPath = rest.join(path.delimiter);
  const importable = spawnSync(proc.argv[0], ['-c', 'import engram_ls'], {
    env: { PATH: hostPath },
    cwd: os.tmpdir(), // `-c` puts the working folder on sys.path
    encoding: 'utf8',
  });
  const bundled = {
    extension: dirs[0],
    argv: proc.argv,
    hostPath,
    python: which('python3', hostPath),
    engramLsOnPath: hostPath.split(path.delimiter).filter(holdsEngramLs),
    engramImportable: importable.status === 0,
    pythonPath: pythonPath.map((p) => path.relative(installed, p)),
    insideExtension: pythonPath.every((p) => p.startsWith(installed + path.sep)),
    rgFirstOnPath: first === path.dirname(rg),
    rgExecutable,
  };
  result.checks.bundled = bundled;
  log(`bundled server: ${JSON.stringify(bundled)}`);
  const [program, ...args] = proc.argv;
  if (program !== bundled.python || args.slice(0, 3).join(' ') !== `-P -m ${SERVER_MODULE}`) {
    throw new Error(`the server is not the bundled one run by python3 from PATH: ${proc.argv.join(' ')}`);
  }
  if (bundled.engramLsOnPath.length > 0 || bundled.engramImportable || importable.error) {
    throw new Error(`the extension host's PATH is not clean: ${JSON.stringify(bundled)} ${importable.error ?? ''}`);
  }
  if (!bundled.insideExtension || !rgExecutable || !bundled.rgFirstOnPath) {
    throw new Error(`the server does not run from the installed extension's bundle: ${JSON.stringify(bundled)}`);
  }
}

async function waitReady(page, what) {
  return waitFor(
    what,
    async () => (await statusBarTexts(page)).find((t) => new RegExp(`Engram: ready · ${EXPECTED_NOTES} notes`).test(t)),
    60000,
  );
}

async function checkStatusAndReindex(page) {
  const before = serverPids();
  if (before.length !== 1) {
    throw new Error(`expected one engram-ls process, found ${before.length}`);
  }
  await runCommand(page, 'Engram: Show Index Status');
  const rows = await waitFor(
    'the index status picker',
    async () => {
      const labels = await quickPickRows(page);
      return labels.some((l) => /ready/.test(l) && new RegExp(`${EXPECTED_NOTES} notes`).test(l)) ? labels : undefined;
    },
    10000,
  );
  await shot(page, '06-index-status');
  // Choose "Reindex" in the picker: the language server is restarted.
  await page.locator('.quick-input-widget .quick-input-box input').fill('Reindex');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Reindex' }).first().waitFor({ timeout: 5000 });
  await page.keyboard.press('Enter');
  const after = await waitFor(
    'a new engram-ls process after Reindex',
    () => {
      const pids = serverPids();
      return pids.length === 1 && pids[0] !== before[0] ? pids : undefined;
    },
    30000,
  );
  const text = await waitReady(page, 'the status bar to show ready again after Reindex');
  result.checks.reindex = { statusRows: rows, serverPidBefore: before[0], serverPidAfter: after[0], statusBar: text };
  log(`reindex: engram-ls pid ${before[0]} -> ${after[0]}; ${text}`);
}

async function checkSettingsRestart(page, vault) {
  const dir = path.join(vault, '.vscode');
  const settingsFile = path.join(dir, 'settings.json');
  fs.mkdirSync(dir, { recursive: true });
  // engram.server.command, when set, wins over the bundled server.
  let explicit;
  if (opts.server) {
    fs.writeFileSync(settingsFile, JSON.stringify({ 'engram.server.command': [opts.server] }, null, 2));
    const proc = await waitFor(
      'engram.server.command to replace the bundled server',
      () => {
        const procs = serverProcs();
        return procs.length === 1 && procs[0].argv.includes(opts.server) && !procs[0].argv.includes(SERVER_MODULE)
          ? procs[0]
          : undefined;
      },
      30000,
    );
    explicit = { argv: proc.argv, statusBar: await waitReady(page, 'the status bar to show ready with engram.server.command') };
    log(`engram.server.command: ${proc.argv.join(' ')}`);
  }
  // A workspace setting (.vscode/settings.json) points the server command at a missing file.
  const missing = path.join(vault, 'no-such-engram-ls');
  fs.writeFileSync(settingsFile, JSON.stringify({ 'engram.server.command': [missing] }, null, 2));
  const message = await waitFor(
    'an error message naming the missing server',
    async () => {
      const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
      return toasts.find((t) => t.includes('no-such-engram-ls') && /engram\.server\.command/.test(t));
    },
    30000,
  );
  const failed = await waitFor(
    'the status bar to say the server is not running',
    async () => (await statusBarTexts(page)).find((t) => /Engram: not running/.test(t)),
    10000,
  );
  // The Tasks view (left open in the Explorer by the tasks check) says why, in one row.
  const tasksDown = await waitFor(
    'the Tasks view to show the start failure',
    async () => {
      const rows = await taskRows(page);
      return rows.length === 1 && rows[0].label.includes('no-such-engram-ls') ? rows[0].label : undefined;
    },
    10000,
  );
  await shot(page, '07-server-missing');
  await waitFor('the old engram-ls to exit', () => serverPids().length === 0, 10000);
  // engram.server.pythonPath naming a missing Python: the bundled server cannot start, and the
  // message says which setting and what Python to give.
  const noPython = path.join(vault, 'no-such-python');
  fs.writeFileSync(settingsFile, JSON.stringify({ 'engram.server.pythonPath': noPython }, null, 2));
  const pythonMessage = await waitFor(
    'an error message naming the missing Python',
    async () => {
      const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
      return toasts.find((t) => t.includes('no-such-python') && /engram\.server\.pythonPath/.test(t));
    },
    30000,
  );
  await shot(page, '07b-python-missing');
  fs.rmSync(dir, { recursive: true, force: true });
  const text = await waitReady(page, 'the status bar to show ready after the setting was fixed');
  const bundledAgain = await waitFor('the bundled server to run again', () => bundledProc(), 10000);
  const tasksUp = await waitFor(
    'the Tasks view to list the tasks again',
    async () => {
      const rows = await taskRows(page);
      return groupTasks(rows, 'Overdue') ? rows.filter((r) => r.level === 1).map((r) => r.label) : undefined;
    },
    15000,
  );
  result.checks.settingsRestart = {
    explicit,
    bundledAgain: bundledAgain.argv,
    message: message.replace(/\s+/g, ' ').trim(),
    pythonMessage: pythonMessage.replace(/\s+/g, ' ').trim(),
    failedStatus: failed,
    statusBar: text,
    tasksView: { failed: tasksDown, recovered: tasksUp },
  };
  log(`settings restart: "${result.checks.settingsRestart.message.slice(0, 120)}…"; then ${text}`);
  await page.keyboard.press('Escape');
}

async function checkModeRefused(page, vault) {
  // engram.settings turns semantic search off: the running server applies it (told by
  // workspace/didChangeConfiguration, no restart) and refuses the mode with
  // ENGRAM_UNSUPPORTED_MODE, as it does without the semantic extra.
  const dir = path.join(vault, '.vscode');
  fs.mkdirSync(dir, { recursive: true });
  const before = serverPids();
  fs.writeFileSync(
    path.join(dir, 'settings.json'),
    JSON.stringify({ 'engram.settings': { semantic: { enabled: false } } }, null, 2),
  );
  await waitReady(page, 'the status bar to show ready with semantic search off');
  let refused;
  await waitFor('the server to apply semantic.enabled: false', async () => {
    await runCommand(page, 'Engram: Search Notes');
    try {
      refused = await searchFor(page, 'mode:semantic memory leak', 'ENGRAM_UNSUPPORTED_MODE\\] · semantic mode$');
      // Without the semantic extra the server refuses the mode before it has applied the
      // setting too (naming the install command): wait for the refusal that names the setting.
      if (refused.title.includes('semantic.enabled')) {
        return true;
      }
      await page.keyboard.press('Escape');
      return undefined;
    } catch {
      await page.keyboard.press('Escape');
      return undefined;
    }
  }, 40000, 1000);
  const after = serverPids();
  refused.samePid = after.length === 1 && before.length === 1 && after[0] === before[0];
  await shot(page, '08-semantic-refused');
  await page.keyboard.press('Escape');
  fs.rmSync(dir, { recursive: true, force: true });
  result.checks.modeRefused = refused;
  log(`mode refused: ${JSON.stringify(refused)}`);
}

function findFile(dir, name) {
  if (!fs.existsSync(dir)) {
    return undefined;
  }
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isFile() && entry.name === name) {
      return full;
    }
    if (entry.isDirectory()) {
      const found = findFile(full, name);
      if (found) {
        return found;
      }
    }
  }
  return undefined;
}

async function main() {
  fs.rmSync(opts.artifacts, { recursive: true, force: true });
  fs.mkdirSync(opts.artifacts, { recursive: true });
  requireFile(opts.codeServer, 'code-server', 'run scripts/install_vscode.sh');
  requireFile(opts.chromium, 'Chromium', 'run scripts/install_vscode.sh');
  if (!opts.vsix) {
    throw new Error('pass --vsix (npm run package writes dist/engram-TARGET.vsix)');
  }
  requireFile(opts.vsix, 'the .vsix', 'run `npm run package` in editors/vscode');
  if (opts.server) {
    requireFile(opts.server, 'engram-ls', 'install Engram (scripts/install.sh) and pass its engram-ls');
  }

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'engram-vscode-e2e-'));
  let browser;
  try {
    const { vault, userData, extensions } = prepare(tmp);
    const common = ['--user-data-dir', userData, '--extensions-dir', extensions];
    log(`installing ${opts.vsix}`);
    const install = spawnSync(opts.codeServer, [...common, '--install-extension', opts.vsix], {
      encoding: 'utf8',
      timeout: 60000,
    });
    fs.writeFileSync(path.join(opts.artifacts, 'install-extension.log'), `${install.stdout}\n${install.stderr}`);
    if (install.status !== 0) {
      throw new Error(`code-server --install-extension failed (${install.status}): ${install.stderr || install.stdout}`);
    }

    const port = await freePort();
    const env = cleanEnv();
    startProcess('code-server', opts.codeServer, [
      ...common,
      '--bind-addr', `127.0.0.1:${port}`,
      '--auth', 'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      vault,
    ], env);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('code-server to answer', () => httpOk(`${base}/healthz`), 30000);
    log(`code-server at ${base}`);

    const profile = path.join(tmp, 'chromium-profile');
    const chrome = startProcess('chromium', opts.chromium, [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      `--user-data-dir=${profile}`,
      '--remote-debugging-address=127.0.0.1',
      '--remote-debugging-port=0',
      '--window-size=1400,900',
      'about:blank',
    ]);
    const portFile = path.join(profile, 'DevToolsActivePort');
    const devtools = await waitFor(
      'Chromium to open its DevTools port',
      () => {
        if (chrome.exitCode !== null) {
          throw new Error(`chromium exited with ${chrome.exitCode} (see chromium.log)`);
        }
        const lines = fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8').split('\n') : [];
        return lines.length >= 2 && lines[1] ? `ws://127.0.0.1:${lines[0]}${lines[1]}` : undefined;
      },
      30000,
    );
    browser = await chromium.connectOverCDP(devtools);
    const context = browser.contexts()[0] ?? (await browser.newContext());
    const page = await context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    page.on('pageerror', (err) => result.errors.push(`page error: ${err.message}`));
    await page.goto(`${base}/?folder=${encodeURIComponent(vault)}`);
    await page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: 60000 });
    log('workbench loaded');

    for (const [name, check] of [
      ['status bar', checkStatusBar],
      ['server from the bundle', () => checkBundled(extensions)],
      ['frontmatter completion', checkCompletion],
      ['search notes', checkSearch],
      ['search modes', (p) => checkSearchModes(p, vault)],
      ['related notes', checkRelated],
      ['backlinks code lens', checkCodeLens],
      ['run a base view', checkBase],
      ['tasks view', (p) => checkTasks(p, vault)],
      ['index status and reindex', checkStatusAndReindex],
      ['restart on setting change', (p) => checkSettingsRestart(p, vault)],
      ['a refused mode in the picker', (p) => checkModeRefused(p, vault)],
    ]) {
      try {
        await check(page);
        log(`PASS ${name}`);
      } catch (error) {
        result.errors.push(`${name}: ${error.message}`);
        log(`FAIL ${name}: ${error.message}`);
        await shot(page, `fail-${name.replace(/\W+/g, '-')}`).catch(() => undefined);
        await page.keyboard.press('Escape').catch(() => undefined);
      }
    }
    // The build's work-done progress reached the extension (it logs begin and end).
    const engramLog = findFile(path.join(userData, 'logs'), 'Engram.log');
    const logText = engramLog ? fs.readFileSync(engramLog, 'utf8') : '';
    const progress = logText.split('\n').filter((line) => /Progress( done)?:/.test(line));
    result.checks.progress = progress;
    if (!progress.some((line) => /Progress: Engram: indexing/.test(line)) || !progress.some((line) => /Progress done: \d+ notes/.test(line))) {
      result.errors.push(`work-done progress: no begin/end in the Engram log (${engramLog ?? 'no log'})`);
    }
    result.ok = result.errors.length === 0;
  } catch (error) {
    result.errors.push(error.message);
    log(`ERROR ${error.message}`);
  } finally {
    // Keep the server-side logs (the Engram output channel, the extension host).
    const logs = path.join(tmp, 'user-data', 'logs');
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, path.join(opts.artifacts, 'vscode-logs'), { recursive: true });
    }
    await browser?.close().catch(() => undefined);
    await killAll();
    fs.rmSync(tmp, { recursive: true, force: true });
    result.seconds = (Date.now() - started) / 1000;
    fs.writeFileSync(path.join(opts.artifacts, 'result.json'), JSON.stringify(result, null, 2));
    log(`${result.ok ? 'OK' : 'FAILED'}; artifacts in ${opts.artifacts}`);
  }
  return result.ok ? 0 : 1;
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    log(`${signal}: stopping`);
    await killAll();
    process.exit(130);
  });
}

const overall = setTimeout(async () => {
  log(`overall timeout of ${opts.timeout} s`);
  await killAll();
  process.exit(2);
}, opts.timeout * 1000);

main().then(
  (code) => {
    clearTimeout(overall);
    process.exit(code);
  },
  async (error) => {
    console.error(error);
    await killAll();
    process.exit(1);
  },
);
