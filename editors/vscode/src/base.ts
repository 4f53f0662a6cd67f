/**
 * "Engram: Run Base View": runs the Obsidian base open in the editor (a `.base` file, or the
 * ```base block at the cursor of a note) through `engram/query` and shows the view as a
 * read-only Markdown document beside it (a table whose first column links to each note). A base
 * with several views offers them in a picker. A server error (an unsupported construct, a YAML
 * error: with its line) is shown as an error message.
 */
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { BASE_SCHEME, Methods } from './constants';
import { documentPath, documentText, queryParams, type QueryResult, runnable, viewChoices } from './baseView';
import { errorText, isMethodNotFound } from './errors';

/** The read-only documents of the views run so far, by URI (a document shows again what its
 * last run gave). */
export class BaseViews implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** Put `text` at the view's URI and tell VS Code, which reloads an open document. */
  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
  }

  dispose(): void {
    this.changed.dispose();
    this.texts.clear();
  }
}

export async function runBaseView(getClient: () => LanguageClient | undefined, views: BaseViews): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const kind = editor && runnable(editor.document.fileName, editor.document.languageId);
  if (!editor || !kind) {
    void vscode.window.showWarningMessage('Engram: open a .base file, or a note with a ```base block, to run its view.');
    return;
  }
  const client = getClient();
  if (!client || !client.isRunning()) {
    void vscode.window.showWarningMessage(
      'Engram: the language server is not running (see "Engram: Show Index Status").',
    );
    return;
  }
  const document = editor.document;
  const source = vscode.workspace.asRelativePath(document.uri, false);
  const line = editor.selection.active.line;
  const ask = (view?: string) =>
    client.sendRequest<QueryResult>(Methods.query, queryParams(document.uri.toString(), kind, line, view));
  let result: QueryResult;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Engram: running ${source}` },
      () => ask(),
    );
    const choices = viewChoices(result);
    if (choices.length > 0) {
      const picked = await vscode.window.showQuickPick(choices, {
        title: `Engram: views of ${source}`,
        placeHolder: 'The view to show',
      });
      if (!picked) {
        return;
      }
      if (picked.label !== result.view) {
        result = await ask(picked.label);
      }
    }
  } catch (error) {
    const text = isMethodNotFound(error)
      ? `this engram-ls does not answer ${Methods.query} (a newer Engram runs bases): ${errorText(error)}`
      : errorText(error);
    void vscode.window.showErrorMessage(`Engram: ${source}: ${text}`);
    return;
  }
  const uri = vscode.Uri.from({ scheme: BASE_SCHEME, path: documentPath(source, result.view) });
  views.set(uri, documentText(source, result));
  const shown = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(shown, { viewColumn: vscode.ViewColumn.Beside, preview: true });
}
