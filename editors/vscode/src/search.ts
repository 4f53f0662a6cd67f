/**
 * "Engram: Search Notes": a QuickPick that sends `engram/search` as the user types (parsed by
 * query.ts), lists the hits and opens the chosen note at its line. Server errors (JSON-RPC
 * errors with `data.code`, e.g. ENGRAM_INVALID_REQUEST for a bad date or
 * ENGRAM_UNSUPPORTED_MODE for a mode this installation lacks) are shown in the picker instead
 * of thrown. The picker starts in the mode of `engram.search.mode`; its mode button cycles the
 * mode for this picker, and a `mode:NAME` term in the query overrides both.
 */
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { Methods } from './constants';
import { errorCode, errorText } from './errors';
import {
  effectiveMode,
  isEmptyQuery,
  nextMode,
  parseQuery,
  QUERY_HELP,
  type SearchMode,
  type SearchParams,
  toSearchParams,
} from './query';
import type { EngramSettings } from './settings';

interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

export interface SearchHit {
  path: string;
  uri: string;
  title: string;
  line: number;
  snippet: string;
  range?: LspRange;
  created_at?: string | null;
  topics?: string[];
  score?: number;
}

export interface SearchResult {
  results: SearchHit[];
  total: number;
  truncated: boolean;
  index?: { state?: string; served_by?: string };
  elapsed_ms?: number;
}

interface HitItem extends vscode.QuickPickItem {
  hit?: SearchHit;
}

const placeholder = (mode: SearchMode) => `Search notes (${mode} mode): ${QUERY_HELP}`;

/** The mode button: its tooltip says the mode now and the one a click switches to. */
function modeButton(mode: SearchMode): vscode.QuickInputButton {
  return {
    iconPath: new vscode.ThemeIcon('arrow-swap'),
    tooltip: `Search mode: ${mode} (click for ${nextMode(mode)})`,
  };
}

function toItem(hit: SearchHit, folderName: string | undefined): HitItem {
  const where = folderName ? `${folderName}/${hit.path}` : hit.path;
  const description = [where, hit.created_at ?? undefined].filter(Boolean).join(' · ');
  const topics = hit.topics && hit.topics.length > 0 ? `${hit.topics.map((t) => `#${t}`).join(' ')}  ` : '';
  return {
    label: hit.title || hit.path,
    description,
    detail: `${topics}line ${hit.line}: ${hit.snippet}`,
    alwaysShow: true,
    hit,
  };
}

async function openHit(hit: SearchHit): Promise<void> {
  const line = hit.range ? hit.range.start.line : Math.max(0, hit.line - 1);
  const position = new vscode.Position(line, 0);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(hit.uri), {
    selection: new vscode.Range(position, position),
    preview: true,
  });
  editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenter);
}

/** One request per workspace folder (each folder is a vault); a single folder needs no uri. */
async function runSearch(
  client: LanguageClient,
  params: SearchParams,
  token: vscode.CancellationToken,
): Promise<{ items: HitItem[]; total: number; truncated: boolean; building: boolean }> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const targets = folders.length > 1 ? folders : [undefined];
  const answers = await Promise.all(
    targets.map(async (folder) => {
      const request = folder ? { ...params, uri: folder.uri.toString() } : params;
      const result = await client.sendRequest<SearchResult>(Methods.search, request, token);
      return { folder, result };
    }),
  );
  const items: HitItem[] = [];
  let building = false;
  let total = 0;
  let truncated = false;
  for (const { folder, result } of answers) {
    total += result.total;
    truncated ||= result.truncated;
    // A literal or regex query the index cannot narrow is also served by a scan of the files,
    // with the index ready: only a scan while the index is not ready means "being built".
    building ||= result.index?.served_by === 'scan' && result.index.state !== 'ready';
    items.push(...result.results.map((hit) => toItem(hit, folder?.name)));
  }
  return { items, total, truncated, building };
}

export async function searchNotes(
  getClient: () => LanguageClient | undefined,
  getSettings: () => EngramSettings,
  initialQuery?: string,
): Promise<void> {
  const picker = vscode.window.createQuickPick<HitItem>();
  // This picker's mode: the setting's, until the mode button changes it.
  let mode: SearchMode = getSettings().searchMode;
  // Every title names the mode the shown results (or error) came from.
  const setTitle = (text: string, shownMode: string = mode) => {
    picker.title = `${text} · ${shownMode} mode`;
  };
  setTitle('Engram: Search Notes');
  picker.placeholder = placeholder(mode);
  picker.buttons = [modeButton(mode)];
  picker.matchOnDescription = false;
  picker.matchOnDetail = false;
  let pending: vscode.CancellationTokenSource | undefined;
  let timer: NodeJS.Timeout | undefined;
  let generation = 0;

  const showMessage = (label: string, title: string, shownMode?: string) => {
    picker.items = [{ label, alwaysShow: true }];
    setTitle(title, shownMode);
  };

  const query = async (value: string, seq: number) => {
    pending?.cancel();
    pending?.dispose();
    pending = undefined;
    const parsed = parseQuery(value);
    const shownMode = effectiveMode(parsed, mode);
    if (isEmptyQuery(parsed)) {
      picker.items = [];
      setTitle('Engram: Search Notes', shownMode);
      picker.busy = false;
      return;
    }
    const client = getClient();
    if (!client || !client.isRunning()) {
      showMessage('$(warning) The Engram language server is not running', 'Engram: not running (see "Engram: Show Index Status")');
      return;
    }
    const source = new vscode.CancellationTokenSource();
    pending = source;
    picker.busy = true;
    try {
      const params = toSearchParams(parsed, getSettings().searchLimit, mode);
      const found = await runSearch(client, params, source.token);
      if (seq !== generation) {
        return;
      }
      const scan = found.building ? ' (read from the files: the index is being built)' : '';
      const shown = found.items.length;
      setTitle(
        shown === 0
          ? `Engram: no notes match${scan}`
          : `Engram: ${shown === found.total ? shown : `${shown} of ${found.total}`} note${found.total === 1 ? '' : 's'}${scan}`,
        shownMode,
      );
      picker.items = shown === 0 ? [{ label: 'No notes match', alwaysShow: true }] : found.items;
    } catch (error) {
      if (seq !== generation || source.token.isCancellationRequested) {
        return;
      }
      const text = errorText(error);
      // A mode this installation lacks is a missing feature (its message names the install
      // command), not a mistake in the query.
      const icon = errorCode(error) === 'ENGRAM_UNSUPPORTED_MODE' ? '$(warning)' : '$(error)';
      showMessage(`${icon} ${text}`, `Engram: ${text}`, shownMode);
    } finally {
      if (seq === generation) {
        picker.busy = false;
      }
      if (pending === source) {
        pending = undefined;
      }
      source.dispose();
    }
  };

  const schedule = (value: string, delay: number) => {
    generation++;
    const seq = generation;
    if (timer) {
      clearTimeout(timer);
    }
    timer = setTimeout(() => void query(value, seq), delay);
  };

  const disposables: vscode.Disposable[] = [
    picker.onDidChangeValue((value) => schedule(value, getSettings().debounceMs)),
    picker.onDidTriggerButton(() => {
      mode = nextMode(mode);
      picker.buttons = [modeButton(mode)];
      picker.placeholder = placeholder(mode);
      schedule(picker.value, 0);
    }),
    picker.onDidAccept(() => {
      const hit = picker.selectedItems[0]?.hit;
      if (hit) {
        picker.hide();
        openHit(hit).then(undefined, (error: unknown) =>
          vscode.window.showErrorMessage(`Engram: cannot open ${hit.path}: ${errorText(error)}`),
        );
      }
    }),
    picker.onDidHide(() => {
      if (timer) {
        clearTimeout(timer);
      }
      pending?.cancel();
      for (const d of disposables) {
        d.dispose();
      }
      picker.dispose();
    }),
  ];
  if (initialQuery) {
    picker.value = initialQuery;
    schedule(initialQuery, 0);
  }
  picker.show();
}
