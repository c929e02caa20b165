/**
 * The rules an archive entry is held to, wherever an archive is unpacked: at registration and in
 * the builder (a module's source, a prebuilt bundle) and on a node (a bundle). One rule set, so
 * what a node would refuse is refused when the module is added, not found out on every node.
 *
 * Pure: the caller reads the archive's headers (with tar) and hands each entry's fields here, in
 * order. Nothing is written before every entry has passed.
 */

/** How much an archive may unpack to. A decompression bomb is stopped while it is read. */
export interface ArchiveLimits {
  /** Most bytes the unpacked files may hold together. */
  readonly maxBytes: number;
  /** Most entries (files, folders, links). */
  readonly maxEntries: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  maxBytes: 1024 * 1024 * 1024,
  maxEntries: 100_000,
};

/** The header fields of one tar entry that the rules look at (tar's `ReadEntry` has them all). */
export interface ArchiveEntryInfo {
  readonly path: string;
  /** tar's type name: File, OldFile, Directory, SymbolicLink, Link, CharacterDevice, … */
  readonly type: string;
  readonly size: number;
  readonly mode?: number | undefined;
  readonly linkpath?: string | undefined;
}

/** Why an entry is refused: `limit` ends the reading (nothing after it is looked at). */
export interface EntryRefusal {
  readonly kind: "entry" | "limit";
  readonly reason: string;
}

/**
 * Checks the entries of one archive in order. Entry problems are told per entry; passing a limit
 * is told once, after which the caller stops reading.
 */
export class ArchiveEntryCheck {
  readonly #limits: ArchiveLimits;
  readonly #links = new Set<string>();
  /** What each path is so far: a file or a folder. */
  readonly #kinds = new Map<string, "file" | "folder">();
  /** Where the links seen so far point. */
  readonly #targets = new Set<string>();
  #entries = 0;
  #bytes = 0;

  constructor(limits: ArchiveLimits) {
    this.#limits = limits;
  }

  get entries(): number {
    return this.#entries;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The entry's refusal, or undefined when it may be unpacked. */
  check(entry: ArchiveEntryInfo): EntryRefusal | undefined {
    this.#entries += 1;
    if (this.#entries > this.#limits.maxEntries)
      return limit(`it holds more than ${this.#limits.maxEntries} entries (the limit)`);
    if (isFile(entry.type)) {
      const size = Number.isFinite(entry.size) && entry.size > 0 ? entry.size : 0;
      this.#bytes += size;
      if (this.#bytes > this.#limits.maxBytes)
        return limit(`it unpacks to more than ${this.#limits.maxBytes} bytes (the limit)`);
    }
    const reason = this.#entryProblem(entry);
    return reason === undefined ? undefined : { kind: "entry", reason };
  }

  /** A file and a folder under one name, or an entry inside a file: tar fails half-way there. */
  #clash(normal: string, type: string): string | undefined {
    const parts = normal.split("/");
    for (let i = 1; i < parts.length; i++) {
      const above = parts.slice(0, i).join("/");
      if (this.#kinds.get(above) === "file") return `is inside ${JSON.stringify(above)}, a file`;
    }
    const kind = isFile(type) ? "file" : type === "Directory" ? "folder" : undefined;
    if (kind === undefined) return undefined;
    const before = this.#kinds.get(normal);
    if (before !== undefined && before !== kind)
      return `is a ${kind}, and an earlier entry of that name a ${before}`;
    this.#kinds.set(normal, kind);
    return undefined;
  }

  #isLinkOrUnder(path: string): boolean {
    for (const link of this.#links) if (path === link || path.startsWith(`${link}/`)) return true;
    return false;
  }

  #entryProblem(entry: ArchiveEntryInfo): string | undefined {
    const path = entry.path;
    const shown = JSON.stringify(path);
    if (path === "" || path.startsWith("/") || /^[a-zA-Z]:/.test(path) || path.startsWith("\\"))
      return `the entry ${shown} is an absolute path`;
    // eslint-disable-next-line no-control-regex -- a NUL or control character in a name is refused
    if (/[\u0000-\u001f]/.test(path))
      return `the entry ${shown} has a control character in its name`;
    const normal = normalise(path.replace(/\/+$/, ""));
    if (normal === ".." || normal.startsWith("../") || path.split(/[\\/]/).includes(".."))
      return `the entry ${shown} climbs out of the folder it is unpacked in (..)`;
    for (const link of this.#links) {
      if (normal === link || normal.startsWith(`${link}/`))
        return `the entry ${shown} would be written through the symbolic link ${JSON.stringify(link)}`;
    }
    // A link or folder that claims a body is malformed, and tar's extraction waits for that body
    // forever: refused before it gets there.
    if (!isFile(entry.type) && entry.size > 0 && KNOWN_TYPES.has(entry.type))
      return `the entry ${shown} is a ${entry.type} with a body of ${entry.size} bytes; only files carry bytes`;
    const clash = this.#clash(normal, entry.type);
    if (clash !== undefined) return `the entry ${shown} ${clash}`;
    if ((entry.mode ?? 0) & 0o6000)
      return `the entry ${shown} has a set-user-id or set-group-id bit`;
    switch (entry.type) {
      case "File":
      case "OldFile":
      case "Directory":
        return undefined;
      case "SymbolicLink": {
        const target = entry.linkpath ?? "";
        if (target === "" || target.startsWith("/"))
          return `the symbolic link ${shown} points to the absolute path ${JSON.stringify(target)}`;
        const resolved = normalise(`${dirnameOf(normal)}/${target}`);
        if (resolved === ".." || resolved.startsWith("../"))
          return `the symbolic link ${shown} points outside the folder (${JSON.stringify(target)})`;
        // A link into itself makes tar's extraction loop forever; a link to a link can close a
        // cycle. Neither is needed by a bundle: a link points at a file or folder of its own.
        // tar also reads the target as a path from the archive's top when it orders its writes:
        // a target that is a folder the link is in deadlocks its extraction.
        const raw = normalise(target);
        if (
          resolved.startsWith(`${normal}/`) ||
          raw === normal ||
          raw.startsWith(`${normal}/`) ||
          normal.startsWith(`${raw}/`)
        )
          return `the symbolic link ${shown} points into itself or at a folder it is in (${JSON.stringify(target)})`;
        if (this.#isLinkOrUnder(resolved) || this.#targets.has(normal))
          return `the symbolic link ${shown} points at or is pointed at by another symbolic link (${JSON.stringify(target)})`;
        this.#links.add(normal);
        this.#targets.add(resolved);
        return undefined;
      }
      case "Link":
        return `the entry ${shown} is a hard link`;
      case "CharacterDevice":
      case "BlockDevice":
        return `the entry ${shown} is a device node (${entry.type})`;
      case "FIFO":
        return `the entry ${shown} is a FIFO`;
      default:
        return `the entry ${shown} is of type ${entry.type}, which may not be unpacked (only files, folders and links inside)`;
    }
  }
}

const limit = (reason: string): EntryRefusal => ({ kind: "limit", reason });

/** The types that may be unpacked (the rest are refused by their type alone). */
const KNOWN_TYPES: ReadonlySet<string> = new Set(["Directory", "SymbolicLink"]);

function isFile(type: string): boolean {
  return type === "File" || type === "OldFile";
}

function dirnameOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "." : path.slice(0, slash);
}

/** posix.normalize without node:path (core has no I/O imports): `.` parts and `x/..` pairs gone. */
function normalise(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && out.length > 0 && out[out.length - 1] !== "..") out.pop();
    else out.push(part);
  }
  return out.length === 0 ? "." : out.join("/");
}
