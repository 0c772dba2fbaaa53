// The scoreaudit extension: starts `scoreaudit lsp` (stdio) for .audit files.
// Highlighting comes from syntaxes/audit.tmLanguage.json and works without the server.
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('scoreaudit');
  const command = config.get('server.command', 'scoreaudit');
  const serverOptions = { command, args: ['lsp'], transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'audit' },
      { scheme: 'untitled', language: 'audit' },
    ],
    initializationOptions: { debounce_ms: config.get('server.debounceMs', 150) },
  };
  client = new LanguageClient('scoreaudit', 'scoreaudit language server', serverOptions, clientOptions);
  client.start().catch((err) => {
    vscode.window.showErrorMessage(
      `scoreaudit: could not start \`${command} lsp\` (${err.message}). ` +
      "Install it with pip install 'scoreaudit[lsp]' or set scoreaudit.server.command.");
  });
  context.subscriptions.push({ dispose: () => (client ? client.stop() : undefined) });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
