/**
 * "Engram: Related Notes": the notes related to the active Markdown note (links, backlinks
 * and, when the server has semantic search, meaning), from `engram/related`, in a QuickPick;
 * the chosen one opens at its line. A server error is shown as an error message.
 */
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { Methods } from './constants';
import { errorText, isMethodNotFound } from './errors';
import {
  openLine,
  type RelatedHit,
  type RelatedParams,
  type RelatedResult,
  type RelatedRow,
  toRelatedRows,
} from './relatedItems';

type RelatedItem = vscode.QuickPickItem & { hit?: RelatedHit };

async function openRelated(hit: RelatedHit): Promise<void> {
  const position = new vscode.Position(openLine(hit), 0);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(hit.uri), {
    selection: new vscode.Range(position, position),
    preview: true,
  });
  editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenter);
}

export async function relatedNotes(getClient: () => LanguageClient | undefined): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'markdown') {
    void vscode.window.showWarningMessage('Engram: open a Markdown note to see its related notes.');
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
  const name = vscode.workspace.asRelativePath(document.uri, false);
  const picker = vscode.window.createQuickPick<RelatedItem>();
  picker.title = `Engram: notes related to ${name}`;
  picker.placeholder = 'Filter the related notes';
  picker.matchOnDescription = true;
  picker.busy = true;
  const source = new vscode.CancellationTokenSource();
  let hidden = false;
  const disposables: vscode.Disposable[] = [
    picker.onDidAccept(() => {
      const hit = picker.selectedItems[0]?.hit;
      if (hit) {
        picker.hide();
        openRelated(hit).then(undefined, (error: unknown) =>
          vscode.window.showErrorMessage(`Engram: cannot open ${hit.path}: ${errorText(error)}`),
        );
      }
    }),
    picker.onDidHide(() => {
      hidden = true;
      source.cancel();
      for (const d of disposables) {
        d.dispose();
      }
      source.dispose();
      picker.dispose();
    }),
  ];
  picker.show();

  const params: RelatedParams = { uri: document.uri.toString() };
  let rows: RelatedRow[];
  try {
    const result = await client.sendRequest<RelatedResult>(Methods.related, params, source.token);
    rows = toRelatedRows(result);
  } catch (error) {
    if (hidden) {
      return;
    }
    picker.hide();
    const text = isMethodNotFound(error)
      ? `this engram-ls does not answer ${Methods.related} (a newer Engram has related notes): ${errorText(error)}`
      : errorText(error);
    void vscode.window.showErrorMessage(`Engram: related notes: ${text}`);
    return;
  }
  if (hidden) {
    return;
  }
  picker.busy = false;
  picker.title = `Engram: ${rows.length} note${rows.length === 1 ? '' : 's'} related to ${name}`;
  picker.items =
    rows.length === 0
      ? [{ label: 'No related notes', alwaysShow: true }]
      : rows.map((row) => ({ label: row.label, description: row.description, detail: row.detail, hit: row.hit }));
}
