// The workspace folder the chat works on. No `vscode` import: the extension gives it the
// window's folders and a place to keep the choice.

export interface Folder {
  uri: string;
  name: string;
}

export interface Memory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const KEY = 'milk.chatFolder';

/**
 * In a multi-root window the chat works on one folder at a time: the one the user picked
 * (kept per window), else the first. Its sessions, its files and its paths are the chat's.
 */
export class ChatFolder {
  constructor(
    private readonly folders: () => readonly Folder[],
    private readonly memory: Memory,
  ) {}

  /** The chat's folder; the first when the picked one left the window (or none was picked). */
  current(): Folder | undefined {
    const all = this.folders();
    const picked = this.memory.get<string>(KEY);
    return all.find((f) => f.uri === picked) ?? all[0];
  }

  uri(): string | undefined {
    return this.current()?.uri;
  }

  /** The folder's name when there is a choice to make (more than one folder), else undefined. */
  label(): string | undefined {
    return this.folders().length > 1 ? this.current()?.name : undefined;
  }

  /** Make `uri` the chat's folder. False when it is not one of the window's, or already it. */
  async choose(uri: string): Promise<boolean> {
    if (!this.folders().some((f) => f.uri === uri) || uri === this.uri()) return false;
    await this.memory.update(KEY, uri);
    return true;
  }
}
