import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ServerError } from "../errors";

/** Who holds a data directory, as written in its `patchbay.lock`. */
export interface LockHolder {
  pid: number;
  host: string;
  /** ISO time the lock was taken. */
  since: string;
}

/**
 * Another server holds the data directory: two servers on one SQLite store would end each
 * other's turns at startup and interleave their writes. `holder` says which process.
 *
 * @example
 * ```ts
 * try { await createServer({ dataDir }); } catch (e) { if (e instanceof DataDirLockedError) console.log(e.holder.pid); }
 * ```
 */
export class DataDirLockedError extends ServerError {
  readonly holder: LockHolder;
  constructor(dir: string, holder: LockHolder) {
    super(
      "data_dir_locked",
      `the data directory ${dir} is in use by another Patchbay server (pid ${holder.pid} on ${holder.host}, since ${holder.since}); stop it or choose another --data-dir`,
    );
    this.name = "DataDirLockedError";
    this.holder = holder;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as Partial<LockHolder>;
    if (typeof value.pid === "number" && typeof value.host === "string" && typeof value.since === "string") {
      return value as LockHolder;
    }
  } catch {
    // unreadable or half-written: treated as no holder below
  }
  return undefined;
}

/**
 * Takes the exclusive lock of a data directory (`<dir>/patchbay.lock`, created with O_EXCL) and
 * returns its release. A lock left by a process that is gone (same host, pid not running) is
 * taken over; one held by a live process, or by another host, is a {@link DataDirLockedError}.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "patchbay.lock");
  const me: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o644);
      writeSync(fd, `${JSON.stringify(me)}\n`);
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off("exit", release);
        if (readHolder(path)?.pid === me.pid) unlinkSync(path);
      };
      process.on("exit", release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readHolder(path);
    if (holder && (holder.host !== me.host || alive(holder.pid)) && holder.pid !== me.pid) {
      throw new DataDirLockedError(dir, holder);
    }
    if (holder?.pid === me.pid && holder.host === me.host) {
      throw new DataDirLockedError(dir, holder);
    }
    // Stale (its process is gone) or unreadable: remove it and try again.
    try {
      unlinkSync(path);
    } catch {
      // another process removed it first
    }
  }
  throw new ServerError("data_dir_locked", `could not take the lock of the data directory ${dir}`);
}
