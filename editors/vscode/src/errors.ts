/** How a failed request to engram-ls reads to a person (used by every picker). */
import { ErrorCodes, ResponseError } from 'vscode-languageclient/node';

/** The `data.code` of an engram-ls JSON-RPC error (`ENGRAM_…`), if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (error instanceof ResponseError) {
    const data = error.data as { code?: unknown } | undefined;
    return data && typeof data.code === 'string' ? data.code : undefined;
  }
  return undefined;
}

/** Whether the server does not answer the method at all (an older engram-ls). */
export function isMethodNotFound(error: unknown): boolean {
  return error instanceof ResponseError && error.code === ErrorCodes.MethodNotFound;
}

/** "message [CODE]" for a JSON-RPC error from the server; anything else as text. */
export function errorText(error: unknown): string {
  if (error instanceof ResponseError) {
    const code = errorCode(error);
    return `${error.message}${code ? ` [${code}]` : ''}`;
  }
  return error instanceof Error ? error.message : String(error);
}
