/**
 * "Engram: Run Base View": the `engram/query` params for the file in the editor, the views to
 * pick from, and the read-only document that shows a view's table. No vscode import: unit-tested
 * under plain node.
 */

/** What the command needs of an `engram/query` answer (docs/lsp.md) asked with
 * `format: "markdown"`. */
export interface QueryResult {
  /** The view answered. */
  view: string | null;
  /** Every view of the base, in its order. */
  views: string[];
  /** The view as the table `engram query` prints, each row's first cell a link to its note. */
  markdown: string;
  /** The base's vault path (absent for a base given as text). */
  base?: string;
  total: number;
}

export interface QueryParams {
  uri: string;
  format: 'markdown';
  view?: string;
  /** A note's cursor line (0-based): the server runs the ```base block there. */
  line?: number;
}

/** Whether a file can be run: a `.base` file, or a Markdown note (its ```base blocks). */
export function runnable(fileName: string, languageId: string): 'base' | 'note' | undefined {
  if (/\.base$/i.test(fileName)) {
    return 'base';
  }
  return languageId === 'markdown' ? 'note' : undefined;
}

/** The params for the file at `uri`: a note's block is the one at the cursor's line. */
export function queryParams(uri: string, kind: 'base' | 'note', line: number, view?: string): QueryParams {
  const params: QueryParams = { uri, format: 'markdown' };
  if (kind === 'note') {
    params.line = line;
  }
  if (view !== undefined) {
    params.view = view;
  }
  return params;
}

/** The picker's rows when the base has more than one view (the answered one first, marked);
 * none when there is nothing to choose. */
export function viewChoices(result: QueryResult): { label: string; description?: string }[] {
  if (result.views.length < 2) {
    return [];
  }
  const answered = result.view ?? result.views[0];
  const rest = result.views.filter((v) => v !== answered);
  return [{ label: answered, description: `${result.total} note${result.total === 1 ? '' : 's'}` }, ...rest.map((label) => ({ label }))];
}

/** The path of the read-only document of a view: `<base file name> · <view>.md` (the `.md`
 * makes VS Code show it as Markdown). Slashes, which would make folders, become `∕`. */
export function documentPath(source: string, view: string | null): string {
  const name = (source.split('/').pop() || 'base').replace(/[\\/]/g, '∕');
  const viewName = (view ?? 'view').replace(/[\\/]/g, '∕');
  return `/${name} · ${viewName}.md`;
}

/** The document's text: a title line naming the base and the view, the views to choose from,
 * then the server's table. */
export function documentText(source: string, result: QueryResult): string {
  const lines = [`# ${result.base ?? source} · ${result.view ?? 'view'}`, ''];
  if (result.views.length > 1) {
    lines.push(`Views: ${result.views.join(', ')} ("Engram: Run Base View" picks one).`, '');
  }
  return `${lines.join('\n')}${result.markdown}`;
}
