// milk's language client: vscode-languageclient started on the server command discovery
// found, with the settings answered from `milk.*`, the `experimental.milk` capability, and
// the server's commands that would collide with the extension's own left out.

import type * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  type ClientCapabilities,
  type FeatureState,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { answerConfiguration } from './config';
import type { ServerCommand } from './discovery';
import { CLIENT_EXPERIMENTAL_CAPABILITY } from './methods';

/** Commands this extension registers itself (package.json `contributes.commands`). */
export const EXTENSION_COMMANDS = new Set([
  'milk.openChat',
  'milk.askAboutSelection',
  'milk.escalate',
  'milk.cancel',
  'milk.newSession',
  'milk.switchSession',
  'milk.showContext',
  'milk.doctor',
  'milk.restartServer',
  'milk.reinstallServer',
  'milk.showLog',
  'milk.undoLastTurn',
  'milk.backToLocal',
  'milk.acceptEdit',
  'milk.rejectEdit',
  'milk.advise',
  'milk.chooseFolder',
]);

/**
 * The language client, minus the server's `executeCommandProvider` commands that have the
 * same name as this extension's own (milk.escalate, milk.cancel, …): VS Code refuses a second
 * registration of a command id ("command already exists"), which would stop the client from
 * starting. The extension's commands do the same through the chat view; the server's other
 * commands (those its code actions use) stay registered.
 */
class MilkLanguageClient extends LanguageClient {
  override registerFeature(feature: Parameters<LanguageClient['registerFeature']>[0]): void {
    const f = feature as { registrationType?: { method?: string }; register?: (data: any) => void };
    if (f.registrationType?.method === 'workspace/executeCommand' && typeof f.register === 'function') {
      const register = f.register.bind(feature);
      f.register = (data: { registerOptions?: { commands?: string[] } }) =>
        register({
          ...data,
          registerOptions: { ...data.registerOptions, commands: (data.registerOptions?.commands ?? []).filter((c) => !EXTENSION_COMMANDS.has(c)) },
        });
    }
    super.registerFeature(feature);
  }
}
/** Advertise `experimental.milk.requestPermission` (PROTOCOL.md, Initialization). */
class MilkCapabilityFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    experimental.milk = { ...CLIENT_EXPERIMENTAL_CAPABILITY };
    capabilities.experimental = experimental;
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

export interface MilkClientHooks {
  output: vscode.LogOutputChannel;
  /** the `milk` settings object (initializationOptions, workspace/configuration) */
  settings: () => Record<string, unknown>;
  /** the server process ended: true restarts it */
  closed: () => boolean;
}

export function createMilkClient(server: ServerCommand, hooks: MilkClientHooks): LanguageClient {
  const serverOptions: ServerOptions = { command: server.command, args: server.args, options: { env: process.env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    outputChannel: hooks.output,
    traceOutputChannel: hooks.output,
    initializationOptions: hooks.settings(),
    middleware: {
      workspace: {
        configuration: (params) => answerConfiguration(params.items, hooks.settings()),
      },
    },
    initializationFailedHandler: (error) => {
      hooks.output.error(`initialize failed: ${String(error)}`);
      return false;
    },
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => (hooks.closed() ? { action: CloseAction.Restart } : { action: CloseAction.DoNotRestart, handled: true }),
    },
  };
  const client = new MilkLanguageClient('milk', 'milk', serverOptions, clientOptions);
  client.registerFeature(new MilkCapabilityFeature());
  return client;
}
