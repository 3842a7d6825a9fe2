// A small hand-written `vscode` module for loading the real bundled extension in plain Node.
// What the extension and vscode-languageclient touch is implemented; anything else is
// auto-stubbed by a Proxy and recorded in `autoStubbed` (so the mock's surface stays visible).
// The test drives it through `mock.*` (settings, dialog answers, the webview view).
const Module = require('node:module');
const path = require('node:path');

const autoStubbed = new Set();
function auto(name) {
  const fn = function () {
    return auto(`${name}()`);
  };
  return new Proxy(fn, {
    get(_t, prop) {
      if (prop === 'then' || typeof prop === 'symbol') return undefined;
      if (prop === 'dispose') return () => undefined;
      autoStubbed.add(`${name}.${String(prop)}`);
      return auto(`${name}.${String(prop)}`);
    },
    construct() {
      return auto(`new ${name}`);
    },
  });
}
function withAuto(name, obj) {
  return new Proxy(obj, {
    get(target, prop) {
      if (prop in target || typeof prop === 'symbol' || prop === 'then' || prop === 'toJSON') return target[prop];
      autoStubbed.add(`${name}.${String(prop)}`);
      return auto(`${name}.${String(prop)}`);
    },
  });
}

class Disposable {
  constructor(fn) {
    this._fn = fn;
  }
  static from(...ds) {
    return new Disposable(() => ds.forEach((d) => d && d.dispose && d.dispose()));
  }
  dispose() {
    if (this._fn) this._fn();
    this._fn = undefined;
  }
}
class EventEmitter {
  constructor() {
    this.listeners = [];
    this.event = (f, thisArg) => {
      const l = thisArg ? f.bind(thisArg) : f;
      this.listeners.push(l);
      return new Disposable(() => (this.listeners = this.listeners.filter((x) => x !== l)));
    };
  }
  fire(e) {
    for (const l of [...this.listeners]) l(e);
  }
  dispose() {
    this.listeners = [];
  }
}
class CancellationTokenSource {
  constructor() {
    const em = new EventEmitter();
    this._em = em;
    this.token = { isCancellationRequested: false, onCancellationRequested: em.event };
  }
  cancel() {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this._em.fire();
  }
  dispose() {}
}
const noEvent = () => new Disposable(() => {});

class Uri {
  constructor(scheme, p, query = '', fragment = '') {
    this.scheme = scheme;
    this.authority = '';
    this.path = p;
    this.query = query;
    this.fragment = fragment;
  }
  get fsPath() {
    return this.path;
  }
  static file(p) {
    return new Uri('file', path.resolve(p));
  }
  static parse(s) {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(s);
    if (!m) return new Uri('file', s);
    const u = new Uri(m[1], decodeURIComponent(m[3] || '/'), m[4] || '', m[5] || '');
    u.authority = m[2] || '';
    return u;
  }
  static joinPath(base, ...parts) {
    return new Uri(base.scheme, path.posix.join(base.path, ...parts));
  }
  with(change) {
    const u = new Uri(change.scheme ?? this.scheme, change.path ?? this.path, change.query ?? this.query, change.fragment ?? this.fragment);
    return u;
  }
  toString() {
    if (this.scheme === 'file') return `file://${encodeURI(this.path)}`;
    return `${this.scheme}:${this.authority ? `//${this.authority}` : ''}${this.path}${this.query ? `?${this.query}` : ''}`;
  }
  toJSON() {
    return this.toString();
  }
}
class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
}
class Range {
  constructor(a, b, c, d) {
    if (typeof a === 'number') {
      this.start = new Position(a, b);
      this.end = new Position(c, d);
    } else {
      this.start = a;
      this.end = b;
    }
  }
  get isEmpty() {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}
class Selection extends Range {}
class ThemeColor {
  constructor(id) {
    this.id = id;
  }
}

function createMock() {
  const mock = {
    autoStubbed,
    settings: {},
    /** values a workspace's .vscode/settings.json sets (inspect().workspaceValue) */
    workspaceSettings: {},
    commands: new Map(),
    executed: [],
    errors: [],
    infos: [],
    warnings: [],
    modalCalls: [],
    /** answers for modal/non-modal warnings: (message, options, items) => item | undefined */
    answerWarning: () => undefined,
    /** non-modal information messages with buttons (the diff review's Accept / Reject) */
    answerInfo: () => undefined,
    statusMessages: [],
    clipboard: '',
    /** setContext calls: key -> value */
    context: {},
    /** open editor tabs (diffs opened with vscode.diff) */
    tabs: [],
    tabsEmitter: new EventEmitter(),
    answerError: () => undefined,
    answerInputBox: () => undefined,
    answerQuickPick: () => undefined,
    shownDocuments: [],
    /** the options each showTextDocument had (its selection), in step with shownDocuments */
    shownOptions: [],
    contentProviders: new Map(),
    webviewProviders: new Map(),
    statusItems: [],
    outputLines: [],
    configEmitter: new EventEmitter(),
    progress: [],
    activeTextEditor: undefined,
  };

  const logChannel = (name) => {
    const line = (level) => (s) => mock.outputLines.push(`[${level}] ${s}`);
    return withAuto('LogOutputChannel', {
      name,
      logLevel: 2,
      onDidChangeLogLevel: noEvent,
      append: line('append'),
      appendLine: line('line'),
      trace: line('trace'),
      debug: line('debug'),
      info: line('info'),
      warn: line('warn'),
      error: line('error'),
      replace() {},
      clear() {},
      show() {},
      hide() {},
      dispose() {},
    });
  };

  const configuration = (section) =>
    withAuto('WorkspaceConfiguration', {
      get: (key, dflt) => {
        const full = section ? `${section}.${key}` : key;
        return full in mock.settings ? mock.settings[full] : dflt;
      },
      has: (key) => `${section}.${key}` in mock.settings,
      inspect: (key) => {
        const full = section ? `${section}.${key}` : key;
        return { key: full, globalValue: mock.settings[full], workspaceValue: mock.workspaceSettings[full] };
      },
      update: async () => undefined,
    });

  const textDocuments = [];

  const vscode = withAuto('vscode', {
    version: '1.100.3',
    Disposable,
    EventEmitter,
    CancellationTokenSource,
    Uri,
    Position,
    Range,
    Selection,
    ThemeColor,
    ViewColumn: { One: 1, Two: 2, Active: -1, Beside: -2 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
    env: withAuto('env', {
      language: 'en',
      appName: 'mock-vscode',
      machineId: 'mock',
      remoteName: undefined,
      clipboard: {
        readText: async () => mock.clipboard,
        writeText: async (t) => {
          mock.clipboard = t;
        },
      },
      openExternal: async (uri) => {
        mock.executed.push(['openExternal', uri.toString()]);
        return true;
      },
    }),
    extensions: withAuto('extensions', { all: [], getExtension: () => undefined, onDidChange: noEvent }),
    commands: withAuto('commands', {
      registerCommand: (id, fn) => {
        // as VS Code's extension host does
        if (mock.commands.has(id)) throw new Error(`command '${id}' already exists`);
        mock.commands.set(id, fn);
        return new Disposable(() => mock.commands.delete(id));
      },
      executeCommand: async (id, ...args) => {
        mock.executed.push([id, ...args]);
        if (id === 'milk.chat.focus') return mock.openChatView();
        if (id === 'vscode.diff') {
          mock.tabs.push({ label: args[2], input: { original: args[0], modified: args[1] } });
          mock.tabsEmitter.fire({ opened: [mock.tabs.at(-1)], closed: [], changed: [] });
          return undefined;
        }
        if (id === 'setContext') {
          mock.context[args[0]] = args[1];
          return undefined;
        }
        const fn = mock.commands.get(id);
        return fn ? fn(...args) : undefined;
      },
      getCommands: async () => [...mock.commands.keys()],
    }),
    window: withAuto('window', {
      createOutputChannel: (name) => logChannel(name),
      createStatusBarItem: (id, alignment, priority) => {
        const item = withAuto('StatusBarItem', {
          id,
          alignment,
          priority,
          texts: [],
          name: '',
          tooltip: '',
          command: undefined,
          backgroundColor: undefined,
          visible: false,
          show() {
            this.visible = true;
          },
          hide() {
            this.visible = false;
          },
          dispose() {
            this.visible = false;
            this.disposed = true;
          },
        });
        let text = '';
        Object.defineProperty(item, 'text', {
          get: () => text,
          set: (v) => {
            text = v;
            item.texts.push(v);
          },
        });
        mock.statusItems.push(item);
        return item;
      },
      registerWebviewViewProvider: (id, provider, options) => {
        mock.webviewProviders.set(id, { provider, options });
        return new Disposable(() => mock.webviewProviders.delete(id));
      },
      showInformationMessage: async (m, ...rest) => {
        mock.infos.push(m);
        return mock.answerInfo(m, rest);
      },
      setStatusBarMessage: (m) => {
        mock.statusMessages.push(m);
        return new Disposable(() => {});
      },
      showErrorMessage: async (m, ...items) => {
        mock.errors.push({ message: m, items });
        return mock.answerError(m, items);
      },
      showWarningMessage: async (m, ...rest) => {
        const opts = rest.length && typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0]) ? rest.shift() : {};
        // MessageItems ({title, isCloseAffordance}) are recorded by title; the answer is the item
        const titles = rest.map((i) => (typeof i === 'string' ? i : i.title));
        const close = rest.find((i) => typeof i === 'object' && i.isCloseAffordance)?.title;
        mock.warnings.push({ message: m, options: opts, items: titles, close });
        if (opts.modal) mock.modalCalls.push({ message: m, options: opts, items: titles, close });
        const answer = await mock.answerWarning(m, opts, titles);
        return typeof answer === 'string' && typeof rest[0] === 'object' ? rest.find((i) => i.title === answer) : answer;
      },
      showInputBox: async (opts) => mock.answerInputBox(opts),
      showQuickPick: async (items, opts) => mock.answerQuickPick(await items, opts),
      showTextDocument: async (doc, opts) => {
        mock.shownDocuments.push(doc);
        mock.shownOptions.push(opts);
        return { document: doc, options: opts };
      },
      withProgress: async (options, task) => {
        const entry = { options, reports: [] };
        mock.progress.push(entry);
        const cts = new CancellationTokenSource();
        return task({ report: (v) => entry.reports.push(v) }, cts.token);
      },
      get activeTextEditor() {
        return mock.activeTextEditor;
      },
      visibleTextEditors: [],
      visibleNotebookEditors: [],
      tabGroups: withAuto('tabGroups', {
        get all() {
          return [{ tabs: mock.tabs }];
        },
        onDidChangeTabs: mock.tabsEmitter.event,
        onDidChangeTabGroups: noEvent,
        close: async (tabs) => {
          mock.closeTabs((t) => [].concat(tabs).includes(t));
          return true;
        },
      }),
      onDidChangeActiveTextEditor: noEvent,
      onDidChangeVisibleTextEditors: noEvent,
      onDidChangeWindowState: noEvent,
      state: { focused: true },
    }),
    workspace: withAuto('workspace', {
      getConfiguration: (section) => configuration(section),
      workspaceFolders: undefined,
      isTrusted: true,
      textDocuments,
      notebookDocuments: [],
      onDidChangeConfiguration: mock.configEmitter.event,
      registerTextDocumentContentProvider: (scheme, provider) => {
        mock.contentProviders.set(scheme, provider);
        return new Disposable(() => mock.contentProviders.delete(scheme));
      },
      fs: withAuto('workspace.fs', {
        stat: async (uri) => {
          const st = require('node:fs').statSync(uri.fsPath);
          return { type: st.isDirectory() ? 2 : 1, size: st.size, ctime: st.ctimeMs, mtime: st.mtimeMs };
        },
      }),
      /** `**\/<name>` only: what the chat's file links look up */
      findFiles: async (include) => {
        const name = include.replace(/^\*\*\//, '');
        const root = mock.vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        const out = [];
        const walk = (dir) => {
          for (const e of require('node:fs').readdirSync(dir, { withFileTypes: true })) {
            const full = path.join(dir, e.name);
            if (e.isDirectory() && e.name !== 'node_modules' && e.name !== '.git') walk(full);
            else if (full.endsWith(`/${name}`)) out.push(Uri.file(full));
          }
        };
        if (root) walk(root);
        return out;
      },
      openTextDocument: async (uri) => {
        if (!(uri instanceof Uri)) {
          // an untitled document with content
          return { uri: new Uri('untitled', '/Untitled-1'), getText: () => uri.content, isDirty: true, isUntitled: true, languageId: uri.language };
        }
        const provider = mock.contentProviders.get(uri.scheme);
        const text = provider ? await provider.provideTextDocumentContent(uri) : '';
        return { uri, getText: () => text, isDirty: false, isUntitled: false, languageId: 'markdown' };
      },
      applyEdit: async () => true,
      onDidOpenTextDocument: noEvent,
      onDidCloseTextDocument: noEvent,
      onDidChangeTextDocument: noEvent,
      onDidSaveTextDocument: noEvent,
      onWillSaveTextDocument: noEvent,
      onDidChangeWorkspaceFolders: noEvent,
      onDidOpenNotebookDocument: noEvent,
      onDidCloseNotebookDocument: noEvent,
      onDidChangeNotebookDocument: noEvent,
      onDidSaveNotebookDocument: noEvent,
      onDidCreateFiles: noEvent,
      onDidDeleteFiles: noEvent,
      onDidRenameFiles: noEvent,
      onWillCreateFiles: noEvent,
      onWillDeleteFiles: noEvent,
      onWillRenameFiles: noEvent,
    }),
    languages: withAuto('languages', {
      match: () => 0,
      onDidChangeDiagnostics: noEvent,
      createDiagnosticCollection: () => auto('DiagnosticCollection'),
    }),
  });

  /** Close the tabs matching `pred` (as the user would), firing onDidChangeTabs. */
  mock.closeTabs = (pred) => {
    const closed = mock.tabs.filter(pred);
    if (!closed.length) return;
    mock.tabs = mock.tabs.filter((t) => !closed.includes(t));
    mock.tabsEmitter.fire({ opened: [], closed, changed: [] });
  };

  /** Change settings and fire onDidChangeConfiguration for the changed keys. */
  mock.setSettings = (changes) => {
    Object.assign(mock.settings, changes);
    const keys = Object.keys(changes);
    mock.configEmitter.fire({
      affectsConfiguration: (section) => keys.some((k) => k === section || k.startsWith(`${section}.`)),
    });
  };

  /** The chat webview: resolve the registered provider with a fake WebviewView. */
  mock.webview = undefined;
  mock.openChatView = () => {
    if (mock.webview) return undefined;
    const reg = mock.webviewProviders.get('milk.chat');
    if (!reg) throw new Error('milk.chat provider not registered');
    const fromWebview = new EventEmitter();
    const posted = [];
    const webview = {
      options: {},
      html: '',
      cspSource: 'vscode-webview://mock',
      asWebviewUri: (u) => `vscode-webview://mock${u.path}`,
      postMessage: async (m) => {
        posted.push(JSON.parse(JSON.stringify(m)));
        return true;
      },
      onDidReceiveMessage: fromWebview.event,
    };
    const view = { webview, visible: true, onDidDispose: noEvent, onDidChangeVisibility: noEvent, show() {} };
    mock.webview = { view, posted, send: (m) => fromWebview.fire(m) };
    reg.provider.resolveWebviewView(view, {}, new CancellationTokenSource().token);
    // the page's script says hello once loaded
    setTimeout(() => fromWebview.fire({ type: 'ready' }), 10);
    return undefined;
  };

  mock.vscode = vscode;
  return mock;
}

/** Make `require('vscode')` return the mock. */
function installMock(mock) {
  const orig = Module._load;
  Module._load = function (request, ...rest) {
    if (request === 'vscode') return mock.vscode;
    return orig.call(this, request, ...rest);
  };
  return () => {
    Module._load = orig;
  };
}

module.exports = { createMock, installMock, Uri, Selection, Position, Range };
