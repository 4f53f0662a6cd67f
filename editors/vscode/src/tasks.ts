/**
 * The Explorer's "Tasks" view: the open tasks of every vault (`engram/tasks`, soonest due
 * first) grouped by due day (Overdue, Today, This week, Later, No due date); a click opens the
 * note at the task's line, "Toggle Task" marks it done through the server's `engram.toggleTask`
 * command. A server that is not running or answers an error is one row with the message.
 */
import * as vscode from 'vscode';
import { ExecuteCommandRequest, type LanguageClient, State } from 'vscode-languageclient/node';
import { Commands, Methods, ServerCommands, Views } from './constants';
import { errorText, isMethodNotFound } from './errors';
import {
  describeToggle,
  holdsTask,
  lineOf,
  type MessageRow,
  openCount,
  rootRows,
  type TaskGroup,
  type TaskHit,
  type TaskRow,
  type TasksAnswer,
  tasksParams,
  type TasksResult,
  type ToggleArgs,
  type ToggleResult,
} from './taskItems';

/** A row of the view. */
export type TaskNode =
  | { kind: 'group'; group: TaskGroup }
  | { kind: 'task'; row: TaskRow }
  | { kind: 'message'; message: MessageRow };

/** What the view needs of the server session. */
export interface TasksSource {
  readonly client: LanguageClient | undefined;
  readonly lastError: string | undefined;
}

const NOT_RUNNING = 'The language server is not running (see "Engram: Show Index Status").';

function messageNode(label: string, icon = 'error', tooltip = label): TaskNode {
  return { kind: 'message', message: { label, tooltip, icon } };
}

export class TasksView implements vscode.TreeDataProvider<TaskNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TaskNode | undefined | void>();
  readonly onDidChangeTreeData = this.changed.event;
  readonly view: vscode.TreeView<TaskNode>;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly source: TasksSource) {
    this.view = vscode.window.createTreeView(Views.tasks, { treeDataProvider: this, showCollapseAll: true });
  }

  /** List again after `delay` ms (a burst of saves lists once). */
  refresh(delay = 0): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.changed.fire();
    }, delay);
  }

  getTreeItem(node: TaskNode): vscode.TreeItem {
    if (node.kind === 'group') {
      const { group } = node;
      const item = new vscode.TreeItem(group.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group:${group.key}`;
      item.iconPath = new vscode.ThemeIcon(group.icon);
      item.contextValue = 'engram.taskGroup';
      return item;
    }
    if (node.kind === 'message') {
      const item = new vscode.TreeItem(node.message.label, vscode.TreeItemCollapsibleState.None);
      item.tooltip = node.message.tooltip;
      item.iconPath = new vscode.ThemeIcon(node.message.icon);
      item.contextValue = 'engram.taskMessage';
      return item;
    }
    const { row } = node;
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.id = row.id;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.accessibilityInformation = { label: row.ariaLabel };
    item.iconPath = new vscode.ThemeIcon(row.icon, row.color ? new vscode.ThemeColor(row.color) : undefined);
    item.contextValue = 'engram.task';
    item.command = { command: Commands.openTask, title: 'Open Task', arguments: [row.task] };
    return item;
  }

  async getChildren(node?: TaskNode): Promise<TaskNode[]> {
    if (node) {
      return node.kind === 'group' ? node.group.rows.map((row): TaskNode => ({ kind: 'task', row })) : [];
    }
    return vscode.window.withProgress({ location: { viewId: Views.tasks } }, () => this.list());
  }

  private async list(): Promise<TaskNode[]> {
    const client = this.source.client;
    if (!client || !client.isRunning()) {
      this.view.description = undefined;
      if (client && client.state === State.Starting) {
        return [messageNode('Waiting for the language server to start…', 'loading~spin')];
      }
      const why = this.source.lastError ?? NOT_RUNNING;
      return [messageNode(why)];
    }
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length === 0) {
      this.view.description = undefined;
      return [messageNode('Open a folder of Markdown notes: each workspace folder is a vault.', 'info')];
    }
    const answers = await Promise.all(
      folders.map(async (folder): Promise<TasksAnswer> => {
        try {
          const result = await client.sendRequest<TasksResult>(Methods.tasks, tasksParams(folder.uri.toString()));
          return { folder: folder.name, result };
        } catch (error) {
          const text = isMethodNotFound(error)
            ? `this engram-ls does not answer ${Methods.tasks} (a newer Engram lists tasks): ${errorText(error)}`
            : errorText(error);
          return { folder: folder.name, error: text };
        }
      }),
    );
    const count = openCount(answers);
    this.view.description = count === undefined ? undefined : `${count} open`;
    return rootRows(answers).map((row): TaskNode =>
      row.kind === 'group' ? { kind: 'group', group: row.group } : { kind: 'message', message: row.message },
    );
  }

  /** The task selected in the view, if one is. */
  selectedTask(): TaskHit | undefined {
    const node = this.view.selection.find((n) => n.kind === 'task');
    return node?.kind === 'task' ? node.row.task : undefined;
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.view.dispose();
    this.changed.dispose();
  }
}

/** Open the task's note with the cursor at the start of its line. */
export async function openTask(task: TaskHit): Promise<void> {
  const line = Number.isInteger(task.line) && task.line > 0 ? task.line - 1 : 0;
  const position = new vscode.Position(line, 0);
  try {
    const editor = await vscode.window.showTextDocument(vscode.Uri.parse(task.uri), {
      selection: new vscode.Range(position, position),
      preview: true,
    });
    editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenter);
  } catch (error) {
    void vscode.window.showErrorMessage(`Engram: cannot open ${task.path}: ${errorText(error)}`);
  }
}

function taskOf(arg: unknown): TaskHit | undefined {
  const node = arg as TaskNode | undefined;
  return node && typeof node === 'object' && node.kind === 'task' ? node.row.task : undefined;
}

/** The task's line as the server will read it: the open document's (its buffer), else the
 * file's. */
async function currentLine(task: TaskHit, open: vscode.TextDocument | undefined): Promise<string | undefined> {
  if (open) {
    return task.line <= open.lineCount ? open.lineAt(task.line - 1).text : undefined;
  }
  const bytes = await vscode.workspace.fs.readFile(vscode.Uri.parse(task.uri));
  return lineOf(new TextDecoder('utf-8').decode(bytes), task.line);
}

/**
 * "Toggle Task" on a row of the view (or the selected one): the server's `engram.toggleTask`
 * with the note, the line and, as `expect`, the line as it reads now once it is checked to
 * still hold the task listed (a line that moved or changed is refused, and the view lists
 * again). The server edits the note's buffer when it is open (saved here when it had no
 * unsaved changes, so the file, the index and the view agree), else the file.
 */
export async function toggleTask(
  getClient: () => LanguageClient | undefined,
  tasks: TasksView,
  output: vscode.LogOutputChannel,
  arg?: unknown,
): Promise<void> {
  const task = taskOf(arg) ?? tasks.selectedTask();
  if (!task) {
    void vscode.window.showWarningMessage('Engram: choose a task in the Tasks view to toggle it.');
    return;
  }
  const client = getClient();
  if (!client || !client.isRunning()) {
    void vscode.window.showWarningMessage(`Engram: ${NOT_RUNNING}`);
    return;
  }
  const uri = vscode.Uri.parse(task.uri);
  const find = () => vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  const open = find();
  let current: string | undefined;
  try {
    current = await currentLine(task, open);
  } catch (error) {
    void vscode.window.showErrorMessage(`Engram: cannot read ${task.path}: ${errorText(error)}`);
    return;
  }
  if (!holdsTask(current, task)) {
    const unsaved = open?.isDirty ? ' (the note has unsaved changes)' : '';
    void vscode.window.showWarningMessage(
      `Engram: ${task.path}:${task.line} no longer holds the task "${task.description || task.text}"${unsaved}; the Tasks view lists again.`,
    );
    tasks.refresh();
    return;
  }
  const wasDirty = open?.isDirty ?? false;
  const args: ToggleArgs = { uri: uri.toString(), line: task.line, expect: current };
  let result: ToggleResult;
  try {
    result = (await client.sendRequest(ExecuteCommandRequest.type, {
      command: ServerCommands.toggleTask,
      arguments: [args],
    })) as ToggleResult;
  } catch (error) {
    void vscode.window.showErrorMessage(`Engram: toggle task: ${errorText(error)}`);
    tasks.refresh();
    return;
  }
  output.info(`Tasks: ${describeToggle(result)}`);
  if (result?.applied === 'buffer') {
    const doc = find();
    if (doc && !wasDirty) {
      await doc.save();
    } else if (doc) {
      void vscode.window.showInformationMessage(
        `Engram: ${task.path} has unsaved changes: the task is toggled in its editor; save it to update the Tasks view.`,
      );
    }
  }
  tasks.refresh();
}
