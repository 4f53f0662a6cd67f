/**
 * The answer of `engram/related` and how its results read in a picker. No vscode import: the
 * conversion is unit-tested under plain node.
 */

/** One related note (docs/lsp.md, `engram/related`); `line` is 0-based. */
export interface RelatedHit {
  path: string;
  uri: string;
  title: string;
  score: number;
  line: number;
  snippet: string;
  /** Why it is related: `link` (this note links to it), `backlink` (it links to this note),
   * `meaning` (close in meaning). */
  reasons: string[];
}

export interface RelatedResult {
  results: RelatedHit[];
}

/** The `engram/related` params for a note. */
export interface RelatedParams {
  uri: string;
  limit?: number;
}

/** A picker row for a related note (a QuickPickItem without vscode's types). */
export interface RelatedRow {
  label: string;
  description: string;
  detail: string;
  hit: RelatedHit;
}

const REASONS: Record<string, string> = {
  link: 'linked from this note',
  backlink: 'links here',
  meaning: 'similar meaning',
};

/** The reasons as words, in the server's order; an unknown reason is shown as sent. */
export function describeReasons(reasons: readonly string[] | undefined): string {
  return (reasons ?? []).map((reason) => REASONS[reason] ?? reason).join(', ');
}

/** One row per result, in the server's order: title, then path · reasons, then the snippet. */
export function toRelatedRows(result: RelatedResult | null | undefined): RelatedRow[] {
  return (result?.results ?? []).map((hit) => {
    const reasons = describeReasons(hit.reasons);
    const snippet = (hit.snippet ?? '').replace(/\s+/g, ' ').trim();
    return {
      label: hit.title || hit.path,
      description: [hit.path, reasons].filter(Boolean).join(' · '),
      detail: snippet,
      hit,
    };
  });
}

/** The 0-based line to open a result at (a missing or bad line opens the top). */
export function openLine(hit: RelatedHit): number {
  return typeof hit.line === 'number' && Number.isInteger(hit.line) && hit.line > 0 ? hit.line : 0;
}
