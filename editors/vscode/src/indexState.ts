/**
 * What the status bar says: the client's phase, live work-done progress and the last
 * `engram/status` answer, folded into one line. Pure (no vscode import), unit-tested.
 */

/** One entry of the `engram/status` result (docs/lsp.md). */
export interface VaultStatus {
  root: string;
  uri?: string;
  state: string;
  building: boolean;
  notes: number;
  problems: number;
  topics?: number;
  generation?: number;
  updated_at?: string | null;
  path?: string;
}

export interface StatusResult {
  vaults: VaultStatus[];
}

/** The latest state of one work-done progress token (a build). */
export interface BuildProgress {
  title?: string;
  message?: string;
  percentage?: number;
}

export type ClientPhase = 'starting' | 'running' | 'stopped' | 'failed';

export interface StatusView {
  text: string;
  tooltip: string;
  /** One word for the state, also the accessible summary's first word. */
  state: string;
  severity: 'ok' | 'busy' | 'warning' | 'error';
}

/** Worst first: the combined state of several vaults is the worst of theirs. */
const STATE_ORDER = ['failed', 'building', 'stale', 'empty', 'ready'];

export function combinedState(vaults: readonly VaultStatus[]): string {
  let best = STATE_ORDER.length;
  for (const vault of vaults) {
    const state = vault.building ? 'building' : vault.state;
    const rank = STATE_ORDER.indexOf(state);
    best = Math.min(best, rank === -1 ? 0 : rank);
  }
  return STATE_ORDER[best] ?? 'ready';
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function vaultLine(vault: VaultStatus): string {
  const parts = [`${vault.root}: ${vault.building ? 'building' : vault.state}`, plural(vault.notes, 'note')];
  if (vault.problems > 0) {
    parts.push(plural(vault.problems, 'problem'));
  }
  if (vault.topics !== undefined) {
    parts.push(plural(vault.topics, 'topic'));
  }
  if (vault.updated_at) {
    parts.push(`updated ${vault.updated_at}`);
  }
  return parts.join(', ');
}

/** The text of "Engram: Show Index Status" and the status bar's tooltip. */
export function describeVaults(status: StatusResult | undefined): string {
  if (!status || status.vaults.length === 0) {
    return 'No vault: open a folder of Markdown notes.';
  }
  return status.vaults.map(vaultLine).join('\n');
}

export function summarize(
  phase: ClientPhase,
  status: StatusResult | undefined,
  builds: readonly BuildProgress[] = [],
): StatusView {
  switch (phase) {
    case 'starting':
      return { text: '$(sync~spin) Engram: starting', tooltip: 'Starting engram-ls', state: 'starting', severity: 'busy' };
    case 'failed':
      return {
        text: '$(error) Engram: not running',
        tooltip: 'The language server could not start; click for details.',
        state: 'failed',
        severity: 'error',
      };
    case 'stopped':
      return { text: '$(circle-slash) Engram: stopped', tooltip: 'The language server stopped.', state: 'stopped', severity: 'warning' };
    case 'running':
      break;
  }
  if (builds.length > 0) {
    const pcts = builds.map((b) => b.percentage).filter((p): p is number => typeof p === 'number');
    const pct = pcts.length > 0 ? ` ${Math.round(pcts.reduce((a, b) => a + b, 0) / pcts.length)}%` : '';
    const detail = builds.map((b) => [b.title, b.message].filter(Boolean).join(': ')).join('\n');
    return { text: `$(sync~spin) Engram: indexing${pct}`, tooltip: detail || 'Indexing', state: 'building', severity: 'busy' };
  }
  if (!status) {
    return { text: '$(sync~spin) Engram: starting', tooltip: 'Waiting for the index status', state: 'starting', severity: 'busy' };
  }
  if (status.vaults.length === 0) {
    return { text: '$(database) Engram: no vault', tooltip: describeVaults(status), state: 'empty', severity: 'warning' };
  }
  const state = combinedState(status.vaults);
  const notes = status.vaults.reduce((sum, v) => sum + (v.notes ?? 0), 0);
  const icon =
    state === 'ready' ? '$(database)' : state === 'building' ? '$(sync~spin)' : state === 'failed' ? '$(warning)' : '$(info)';
  const severity = state === 'ready' ? 'ok' : state === 'building' ? 'busy' : state === 'failed' ? 'error' : 'warning';
  return {
    text: `${icon} Engram: ${state} · ${plural(notes, 'note')}`,
    tooltip: describeVaults(status),
    state,
    severity,
  };
}

/** Whether the status should be asked again soon (a build still runs). */
export function isBusy(status: StatusResult | undefined): boolean {
  return !!status && status.vaults.some((v) => v.building || v.state === 'building');
}
