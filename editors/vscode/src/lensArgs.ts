/**
 * The arguments of engram-ls's backlinks code lens (`engram.showReferences`): the note's URI,
 * the lens position and the links' locations, as plain LSP JSON. Checked and turned into plain
 * values here (no `vscode` import, so unit tests run without VS Code); `lenses.ts` makes them
 * VS Code objects for the references peek.
 */

export interface LspPosition {
  line: number;
  character: number;
}

export interface LspLocation {
  uri: string;
  range: { start: LspPosition; end: LspPosition };
}

export interface ReferencesArgs {
  uri: string;
  position: LspPosition;
  locations: LspLocation[];
}

function isPosition(value: unknown): value is LspPosition {
  const p = value as LspPosition;
  return (
    typeof p === 'object' &&
    p !== null &&
    Number.isInteger(p.line) &&
    Number.isInteger(p.character) &&
    p.line >= 0 &&
    p.character >= 0
  );
}

function isLocation(value: unknown): value is LspLocation {
  const l = value as LspLocation;
  return (
    typeof l === 'object' &&
    l !== null &&
    typeof l.uri === 'string' &&
    typeof l.range === 'object' &&
    l.range !== null &&
    isPosition(l.range.start) &&
    isPosition(l.range.end)
  );
}

/** The lens command's arguments, or a reason they cannot be shown. */
export function referencesArgs(args: unknown[]): ReferencesArgs | string {
  const [uri, position, locations] = args;
  if (typeof uri !== 'string' || !isPosition(position) || !Array.isArray(locations)) {
    return 'the backlinks lens sent arguments this extension does not read (a newer engram-ls?)';
  }
  return { uri, position, locations: locations.filter(isLocation) };
}
