/**
 * The language server's lifecycle: start (with a clear message and the fix when it cannot),
 * stop, restart, and keeping the status bar fed from `engram/status`.
 * Starts and stops are serialized, so quick setting changes cannot race.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { type LanguageClient, State } from 'vscode-languageclient/node';
import { createClient } from './client';
import { Methods } from './constants';
import { isBusy, type StatusResult } from './indexState';
import { type Bundle, BundleError, ensureRg, hostTarget, probePython, readBundle } from './bundle';
import { resolveServer } from './server';
import { type EngramSettings, findExecutable, startFailureMessage } from './settings';
import type { IndexStatusBar } from './statusBar';

const BUSY_POLL_MS = 1000;

export class ServerSession implements vscode.Disposable {
  private current: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private pollTimer: NodeJS.Timeout | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  /** Why the server is not running, when it failed to start. */
  lastError: string | undefined;
  /** What runs as the server (program, or the bundle and its Python), once started. */
  serverDescription: string | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  /** The server started running, stopped, failed to start, or finished building an index:
   * what it answers may have changed (the Tasks view lists again). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly statusBar: IndexStatusBar,
    private readonly settings: () => EngramSettings,
    /** The extension's folder (its bundle) and its global storage (the bytecode cache). */
    private readonly paths: { extension: string; storage: string },
  ) {}

  get client(): LanguageClient | undefined {
    return this.current;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  /** A new server process: it opens the index and reconciles it with the files. */
  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async doStart(): Promise<void> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length === 0) {
      this.lastError = 'Open a folder of Markdown notes: each workspace folder is a vault.';
      this.statusBar.setPhase('stopped');
      this.changed.fire();
      return;
    }
    let bundle: Bundle | undefined;
    try {
      bundle = readBundle(this.paths.extension);
    } catch (error) {
      if (!(error instanceof BundleError)) {
        throw error;
      }
      if (this.settings().serverCommand.length === 0) {
        this.failed(
          `Engram: the server this extension carries is broken (${error.message}). Reinstall the extension, ` +
            'or set "engram.server.command" to an engram-ls you installed.',
        );
        return;
      }
    }
    const resolved = await resolveServer(
      this.settings(),
      { home: os.homedir(), workspaceFolder: folders[0].uri.fsPath },
      {
        bundle,
        host: hostTarget(),
        env: process.env,
        find: (command) => findExecutable(command),
        probe: (executable) => probePython(executable),
        pycachePrefix: path.join(this.paths.storage, 'pycache'),
      },
    );
    if ('error' in resolved) {
      this.failed(resolved.error);
      return;
    }
    const { server } = resolved;
    if (bundle && server.source === 'bundled' && !ensureRg(bundle)) {
      this.output.warn('The bundled rg is missing: literal and regex searches use one from PATH.');
    }
    this.serverDescription = server.description ?? [server.command, ...server.args].join(' ');
    if (server.description) {
      this.output.info(`Server: ${server.description}`);
    }
    this.output.info(`Starting ${[server.command, ...server.args, '--stdio'].join(' ')}`);
    const client = createClient({
      server,
      settings: this.settings,
      output: this.output,
      onProgress: (token, value) => {
        if (this.current !== client) {
          return;
        }
        this.statusBar.progress(token, value);
        if (value.kind === 'begin') {
          this.output.info(`Progress: ${value.title}`);
        }
        if (value.kind === 'end') {
          this.output.info(`Progress done: ${value.message ?? ''}`);
          this.scheduleRefresh(0);
          this.changed.fire();
        }
      },
    });
    client.onDidChangeState(({ newState }) => {
      if (this.current === client && newState === State.Stopped) {
        this.statusBar.setPhase('stopped');
        this.changed.fire();
      } else if (this.current === client && newState === State.Running) {
        this.statusBar.setPhase('running');
        this.scheduleRefresh(0);
        this.changed.fire();
      }
    });
    this.current = client;
    this.lastError = undefined;
    this.statusBar.setPhase('starting');
    try {
      await client.start();
    } catch (error) {
      this.current = undefined;
      await client.dispose().catch(() => undefined);
      this.failed(startFailureMessage(server, error));
      return;
    }
    this.statusBar.setPhase('running');
    this.scheduleRefresh(0);
    this.changed.fire();
  }

  private async doStop(): Promise<void> {
    this.clearTimers();
    const client = this.current;
    this.current = undefined;
    if (client) {
      this.statusBar.setPhase('starting');
      try {
        await client.stop(5000);
      } catch (error) {
        this.output.warn(`Stopping the server: ${String(error)}`);
      }
      await client.dispose().catch(() => undefined);
      this.changed.fire();
    }
  }

  private failed(message: string): void {
    this.lastError = message;
    this.serverDescription = undefined;
    this.statusBar.setPhase('failed');
    this.changed.fire();
    this.output.error(message);
    void vscode.window.showErrorMessage(message, 'Open Settings', 'Show Log').then((choice) => {
      if (choice === 'Open Settings') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'engram.server');
      } else if (choice === 'Show Log') {
        this.output.show();
      }
    });
  }

  /** The server's `engram/status`, or undefined when it is not running. */
  async status(): Promise<StatusResult | undefined> {
    const client = this.current;
    if (!client || !client.isRunning()) {
      return undefined;
    }
    const status = await client.sendRequest<StatusResult>(Methods.status);
    if (this.current === client) {
      this.statusBar.setStatus(status);
    }
    return status;
  }

  /** Ask for the status after `delay` ms; keep asking while a build runs. */
  scheduleRefresh(delay = 300): void {
    if (this.refreshTimer) {
      clearTimeout(this.refreshTimer);
    }
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.status().then(
        (status) => {
          if (isBusy(status) && !this.pollTimer) {
            this.pollTimer = setTimeout(() => {
              this.pollTimer = undefined;
              this.scheduleRefresh(0);
            }, BUSY_POLL_MS);
          }
        },
        (error: unknown) => this.output.warn(`engram/status failed: ${String(error)}`),
      );
    }, delay);
  }

  private clearTimers(): void {
    if (this.pollTimer) {
      clearTimeout(this.pollTimer);
      this.pollTimer = undefined;
    }
    if (this.refreshTimer) {
      clearTimeout(this.refreshTimer);
      this.refreshTimer = undefined;
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.changed.dispose();
  }
}
