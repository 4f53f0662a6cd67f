/**
 * The query syntax of "Engram: Search Notes" (shared with the Neovim plugin; keep both equal).
 *
 * The input is split into terms at whitespace; a term that starts with `"` runs to the next
 * `"` (whitespace included) and is a phrase. Each term, in order:
 *
 * | term              | becomes                                   |
 * |-------------------|-------------------------------------------|
 * | `#topic`          | `topic` appended to `tags`                |
 * | `-#topic`         | `-topic` appended to `tags` (excluded)    |
 * | `after:DATE`      | `date_from` (last one wins)               |
 * | `before:DATE`     | `date_to` (last one wins)                 |
 * | `in:folder`       | `path` (last one wins)                    |
 * | `mode:NAME`       | `mode` (last one wins)                    |
 * | `"a phrase"`      | kept in `query` with its quotes           |
 * | anything else     | a word of `query`                         |
 *
 * `query` is the phrases and words joined by single spaces. A prefix with nothing after it
 * (`#`, `-#`, `after:`, `mode:`) is an ordinary word. Values are passed on as typed: the server
 * checks dates, paths and mode names and answers a bad one with an error. An unclosed `"` runs
 * to the end of the input and is kept as typed.
 *
 * `mode` is one of SEARCH_MODES; the picker has a default mode (a setting, or its mode button)
 * that a `mode:NAME` term overrides. `toSearchParams` sends `mode` only when a term gave it or
 * the default is not `text`, the server's own default.
 */

/** The modes of `engram/search`, in the order the picker's mode button cycles through them. */
export const SEARCH_MODES = ['text', 'literal', 'regex', 'semantic', 'hybrid'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** The server's mode when a request names none. */
export const DEFAULT_MODE: SearchMode = 'text';

export function isSearchMode(value: unknown): value is SearchMode {
  return typeof value === 'string' && (SEARCH_MODES as readonly string[]).includes(value);
}

/** The mode after `mode` in SEARCH_MODES (after the last, the first). */
export function nextMode(mode: SearchMode): SearchMode {
  return SEARCH_MODES[(SEARCH_MODES.indexOf(mode) + 1) % SEARCH_MODES.length];
}

export interface ParsedQuery {
  query: string;
  tags: string[];
  date_from?: string;
  date_to?: string;
  path?: string;
  /** As typed after `mode:` (the server rejects a name it does not know). */
  mode?: string;
}

/** The `engram/search` params for a parsed query (only the fields that were given). */
export interface SearchParams {
  query: string;
  tags?: string[];
  date_from?: string;
  date_to?: string;
  path?: string;
  mode?: string;
  limit?: number;
  uri?: string;
}

/** Split at whitespace; a term starting with `"` extends to the closing quote. */
export function tokenize(input: string): string[] {
  const terms: string[] = [];
  let i = 0;
  const n = input.length;
  while (i < n) {
    if (/\s/.test(input[i])) {
      i++;
      continue;
    }
    let end: number;
    if (input[i] === '"') {
      const close = input.indexOf('"', i + 1);
      end = close === -1 ? n : close + 1;
    } else {
      end = i;
      while (end < n && !/\s/.test(input[end])) {
        end++;
      }
    }
    terms.push(input.slice(i, end));
    i = end;
  }
  return terms;
}

const FILTERS: ReadonlyArray<[prefix: string, field: 'date_from' | 'date_to' | 'path' | 'mode']> = [
  ['after:', 'date_from'],
  ['before:', 'date_to'],
  ['in:', 'path'],
  ['mode:', 'mode'],
];

export function parseQuery(input: string): ParsedQuery {
  const parsed: ParsedQuery = { query: '', tags: [] };
  const words: string[] = [];
  for (const term of tokenize(input)) {
    if (term.startsWith('"')) {
      words.push(term);
      continue;
    }
    if (term.startsWith('-#') && term.length > 2) {
      parsed.tags.push(`-${term.slice(2)}`);
      continue;
    }
    if (term.startsWith('#') && term.length > 1) {
      parsed.tags.push(term.slice(1));
      continue;
    }
    const filter = FILTERS.find(([prefix]) => term.startsWith(prefix) && term.length > prefix.length);
    if (filter) {
      parsed[filter[1]] = term.slice(filter[0].length);
      continue;
    }
    words.push(term);
  }
  parsed.query = words.join(' ');
  return parsed;
}

/** Whether the parsed query asks for anything (a search needs text or a filter; a mode alone
 * is neither). */
export function isEmptyQuery(parsed: ParsedQuery): boolean {
  return (
    parsed.query === '' &&
    parsed.tags.length === 0 &&
    parsed.date_from === undefined &&
    parsed.date_to === undefined &&
    parsed.path === undefined
  );
}

/** The mode a search runs in: the query's `mode:` term, else the picker's default. */
export function effectiveMode(parsed: ParsedQuery, defaultMode: SearchMode = DEFAULT_MODE): string {
  return parsed.mode ?? defaultMode;
}

export function toSearchParams(
  parsed: ParsedQuery,
  limit?: number,
  defaultMode: SearchMode = DEFAULT_MODE,
): SearchParams {
  const params: SearchParams = { query: parsed.query };
  if (parsed.tags.length > 0) {
    params.tags = [...parsed.tags];
  }
  if (parsed.date_from !== undefined) {
    params.date_from = parsed.date_from;
  }
  if (parsed.date_to !== undefined) {
    params.date_to = parsed.date_to;
  }
  if (parsed.path !== undefined) {
    params.path = parsed.path;
  }
  if (parsed.mode !== undefined || defaultMode !== DEFAULT_MODE) {
    params.mode = effectiveMode(parsed, defaultMode);
  }
  if (limit !== undefined) {
    params.limit = limit;
  }
  return params;
}

/** Shown when the input is empty. */
export const QUERY_HELP =
  'words, "a phrase", #topic, -#topic, after:2024-01-01, before:2024-12-31, in:folder, mode:regex';
