/**
 * Building the language client: how engram-ls is started, what it is sent
 * (initializationOptions, the `engram` configuration section) and how its work-done
 * progress reaches the status bar.
 */
import * as vscode from 'vscode';
import {
  type ClientCapabilities,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  type StaticFeature,
  TransportKind,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  WorkDoneProgressCreateRequest,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { CLIENT_ID, CONFIG_SECTION, EXTENSION_NAME } from './constants';
import type { EngramSettings, ServerCommand } from './settings';

export type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;
export type ProgressListener = (token: string | number, value: ProgressValue) => void;

/**
 * Takes over `window/workDoneProgress/create` (registered after the built-in handler, so it
 * replaces it) to hand every progress value to a listener, which also renders it.
 */
class ProgressForwarder implements StaticFeature {
  constructor(
    private readonly client: LanguageClient,
    private readonly listener: ProgressListener,
  ) {}

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.window = { ...capabilities.window, workDoneProgress: true };
  }

  initialize(): void {
    this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      const subscription = this.client.onProgress(WorkDoneProgress.type, token, (value) => {
        this.listener(token, value);
        if (value.kind === 'end') {
          subscription.dispose();
        }
      });
    });
  }

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {}
}

export interface ClientParts {
  server: ServerCommand;
  settings: () => EngramSettings;
  output: vscode.LogOutputChannel;
  onProgress: ProgressListener;
}

export function createClient({ server, settings, output, onProgress }: ClientParts): LanguageClient {
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    // Added to the extension host's environment (the bundled server's PYTHONPATH and PATH).
    ...(server.env ? { options: { env: server.env } } : {}),
    // stdio appends --stdio to the arguments; engram-ls accepts it.
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    // Notes, and Obsidian bases: diagnostics, completion and hover in .base files.
    documentSelector: [
      { scheme: 'file', language: 'markdown' },
      { scheme: 'file', pattern: '**/*.base' },
    ],
    // No initializationOptions: the server asks for the `engram` section (answered below) at
    // its start and again when told the settings changed, so a key removed from
    // engram.settings is gone from the server too.
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    middleware: {
      workspace: {
        // The server asks for the `engram` section: answer with the config-file keys of
        // `engram.settings`, not the extension's own settings (server command, search).
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) {
            return result;
          }
          return result.map((value, i) =>
            params.items[i]?.section === CONFIG_SECTION ? settings().serverSettings : value,
          );
        },
      },
    },
  };
  const client = new LanguageClient(CLIENT_ID, EXTENSION_NAME, serverOptions, clientOptions);
  client.registerFeature(new ProgressForwarder(client, onProgress));
  return client;
}
