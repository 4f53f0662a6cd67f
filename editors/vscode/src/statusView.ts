/** "Engram: Show Index Status": each vault's state, counts and update time, and actions. */
import * as vscode from 'vscode';
import type { StatusResult } from './indexState';
import type { ServerSession } from './session';

interface ActionItem extends vscode.QuickPickItem {
  action?: () => unknown;
}

export async function showIndexStatus(
  session: ServerSession,
  output: vscode.LogOutputChannel,
  reindex: () => Promise<void>,
  describe: (status: StatusResult | undefined) => string,
): Promise<void> {
  const items: ActionItem[] = [];
  let status: StatusResult | undefined;
  let error: string | undefined;
  try {
    status = await session.status();
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  if (status) {
    for (const vault of status.vaults) {
      const state = vault.building ? 'building' : vault.state;
      const parts = [`${vault.notes} notes`, `${vault.problems} problems`];
      if (vault.topics !== undefined) {
        parts.push(`${vault.topics} topics`);
      }
      if (vault.updated_at) {
        parts.push(`updated ${vault.updated_at}`);
      }
      items.push({ label: `$(database) ${vault.root}`, description: state, detail: parts.join(' · ') });
    }
    if (status.vaults.length === 0) {
      items.push({ label: '$(info) No vault', detail: 'Open a folder of Markdown notes.' });
    }
    if (session.serverDescription) {
      items.push({ label: '$(server-process) Server', description: 'running', detail: session.serverDescription });
    }
    output.info(`Index status:\n${describe(status)}`);
  } else {
    const why = error ?? session.lastError ?? 'The language server is not running.';
    items.push({ label: '$(error) Engram is not running', detail: why });
  }
  items.push(
    { label: '', kind: vscode.QuickPickItemKind.Separator },
    { label: '$(refresh) Reindex', detail: 'Restart the language server; it reconciles the index with the files on start.', action: reindex },
    { label: '$(output) Show the log', action: () => output.show() },
    {
      label: '$(gear) Open the settings',
      action: () => vscode.commands.executeCommand('workbench.action.openSettings', 'engram'),
    },
  );
  const choice = await vscode.window.showQuickPick(items, {
    title: 'Engram: Index Status',
    placeHolder: status ? 'The index of each vault' : 'The language server is not running',
  });
  await choice?.action?.();
}
