/** Wiring only: settings, the server session, the status bar, the Tasks view and the commands. */
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification } from 'vscode-languageclient/node';
import { BaseViews, runBaseView } from './base';
import { ACTIVE_CONTEXT, BASE_SCHEME, Commands, CONFIG_SECTION, OUTPUT_CHANNEL } from './constants';
import { describeVaults } from './indexState';
import { SHOW_REFERENCES, showReferences } from './lenses';
import { relatedNotes } from './related';
import { searchNotes } from './search';
import { ServerSession } from './session';
import { type EngramSettings, readSettings, RESTART_KEYS } from './settings';
import { IndexStatusBar } from './statusBar';
import { showIndexStatus } from './statusView';
import type { TaskHit } from './taskItems';
import { openTask, TasksView, toggleTask } from './tasks';

let session: ServerSession | undefined;

function loadSettings(output: vscode.LogOutputChannel): EngramSettings {
  const config = vscode.workspace.getConfiguration(CONFIG_SECTION);
  const { settings, problems } = readSettings((key) => config.get(key));
  for (const problem of problems) {
    output.warn(`Settings: ${problem}`);
    void vscode.window.showWarningMessage(`Engram: ${problem}`);
  }
  return settings;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel(OUTPUT_CHANNEL, { log: true });
  let settings = loadSettings(output);
  const statusBar = new IndexStatusBar();
  const current = new ServerSession(output, statusBar, () => settings, {
    extension: context.extensionPath,
    storage: context.globalStorageUri.fsPath,
  });
  session = current;

  const reindex = async () => {
    output.info('Reindex: restarting the language server (it reconciles the index on start).');
    await current.restart();
  };

  const baseViews = new BaseViews();
  const tasksView = new TasksView(current);
  // A note saved, created, deleted or renamed: the server reindexes it, the view lists again.
  const notesChanged = () => {
    current.scheduleRefresh();
    tasksView.refresh(300);
  };

  context.subscriptions.push(
    output,
    statusBar,
    baseViews,
    tasksView,
    current.onDidChange(() => tasksView.refresh(100)),
    vscode.commands.registerCommand(Commands.refreshTasks, () => tasksView.refresh()),
    vscode.commands.registerCommand(Commands.toggleTask, (node?: unknown) =>
      toggleTask(() => current.client, tasksView, output, node),
    ),
    vscode.commands.registerCommand(Commands.openTask, (task: TaskHit) => openTask(task)),
    vscode.workspace.registerTextDocumentContentProvider(BASE_SCHEME, baseViews),
    vscode.commands.registerCommand(Commands.runBase, () => runBaseView(() => current.client, baseViews)),
    vscode.commands.registerCommand(Commands.searchNotes, (initial?: unknown) =>
      searchNotes(() => current.client, () => settings, typeof initial === 'string' ? initial : undefined),
    ),
    vscode.commands.registerCommand(Commands.relatedNotes, () => relatedNotes(() => current.client)),
    // The backlinks code lens of engram-ls: VS Code's references peek on the links.
    vscode.commands.registerCommand(SHOW_REFERENCES, showReferences),
    vscode.commands.registerCommand(Commands.reindex, reindex),
    vscode.commands.registerCommand(Commands.showStatus, () =>
      showIndexStatus(current, output, reindex, describeVaults),
    ),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration(CONFIG_SECTION)) {
        return;
      }
      settings = loadSettings(output);
      if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${CONFIG_SECTION}.${key}`))) {
        output.info('Settings changed: restarting the language server.');
        void current.restart();
      } else if (event.affectsConfiguration(`${CONFIG_SECTION}.settings`)) {
        // The server asks for the section again and applies it (no restart).
        output.info('Settings changed: the language server applies engram.settings.');
        void current.client
          ?.sendNotification(DidChangeConfigurationNotification.type, { settings: null })
          .catch((error: unknown) => output.warn(`Could not send the new settings: ${String(error)}`));
        current.scheduleRefresh();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      if (!current.client) {
        void current.start();
      } else {
        current.scheduleRefresh();
        tasksView.refresh(300);
      }
    }),
    vscode.workspace.onDidSaveTextDocument((doc) => {
      if (doc.languageId === 'markdown') {
        notesChanged();
      }
    }),
    vscode.workspace.onDidCreateFiles(notesChanged),
    vscode.workspace.onDidDeleteFiles(notesChanged),
    vscode.workspace.onDidRenameFiles(notesChanged),
  );
  void vscode.commands.executeCommand('setContext', ACTIVE_CONTEXT, true);
  await current.start();
}

export async function deactivate(): Promise<void> {
  await session?.dispose();
  session = undefined;
}
