/**
 * The commands of engram-ls's code lenses, run on the client side (they are not server
 * commands): "N backlinks" opens VS Code's references peek on the links
 * (`engram.showReferences`); "related" is the Related Notes command (`engram.relatedNotes`,
 * registered in extension.ts).
 */
import * as vscode from 'vscode';
import { referencesArgs } from './lensArgs';

export const SHOW_REFERENCES = 'engram.showReferences';

export async function showReferences(...args: unknown[]): Promise<void> {
  const read = referencesArgs(args);
  if (typeof read === 'string') {
    void vscode.window.showErrorMessage(`Engram: ${read}`);
    return;
  }
  const toPosition = (p: { line: number; character: number }) => new vscode.Position(p.line, p.character);
  const locations = read.locations.map(
    (l) => new vscode.Location(vscode.Uri.parse(l.uri), new vscode.Range(toPosition(l.range.start), toPosition(l.range.end))),
  );
  await vscode.commands.executeCommand(
    'editor.action.showReferences',
    vscode.Uri.parse(read.uri),
    toPosition(read.position),
    locations,
  );
}
