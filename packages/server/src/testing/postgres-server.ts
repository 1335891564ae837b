// Tests' own PostgreSQL: a throwaway cluster (initdb into a temporary directory, fsync off) on a
// free 127.0.0.1 port, started from Debian's postgresql package, or the server named by
// PATCHBAY_TEST_DATABASE_URL when that is set (then each caller gets a fresh database on it).
// Postgres refuses to run as root, so as root the cluster runs as the `postgres` user.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestPostgres {
  /** A connection string for a database of its own. */
  url: string;
  /** Another database of its own on the same server (dropped by `stop`), e.g. a baseline's. */
  database(): Promise<string>;
  stop(): Promise<void>;
}

/** A throwaway server: its databases go with its directory when it stops. */
function throwaway(url: string, stop: () => Promise<void>): TestPostgres {
  return { url, database: async () => (await freshDatabase(url)).url, stop };
}

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions[0]) {
    throw new Error(
      "these tests need PostgreSQL: install Debian's postgresql package (apt-get install postgresql), " +
        "or set PATCHBAY_TEST_DATABASE_URL to a server they may create databases on",
    );
  }
  return join(root, versions[0], "bin");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function asPostgresUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
}

async function waitForReady(bin: string, port: number, dir: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`postgres exited with ${child.exitCode} before it was ready`);
    const ready = spawnSync(join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port)], {
      timeout: 2_000,
    });
    if (ready.status === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`postgres in ${dir} was not ready on port ${port} within 20 s`);
}

/** Starts (or borrows) a PostgreSQL server and hands back a database of its own. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const shared = process.env.PATCHBAY_TEST_DATABASE_URL;
  if (shared) return freshDatabase(shared);
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), "patchbay-pg-"));
  chmodSync(dir, 0o700);
  if (process.getuid?.() === 0) {
    const pw = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dir, Number(pw.stdout.trim()), Number(gid.stdout.trim()));
  }
  const [initCmd, initArgs] = asPostgresUser(join(bin, "initdb"), [
    "-D",
    dir,
    "-U",
    "patchbay",
    "-A",
    "trust",
    "--no-sync",
    "-E",
    "UTF8",
  ]);
  const init = spawnSync(initCmd, initArgs, { encoding: "utf8", timeout: 60_000 });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const [cmd, args] = asPostgresUser(join(bin, "postgres"), [
    "-D",
    dir,
    "-p",
    String(port),
    "-k",
    dir,
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "fsync=off",
    "-c",
    "full_page_writes=off",
  ]);
  const child = spawn(cmd, args, { stdio: "ignore" });
  await waitForReady(bin, port, dir, child);
  return throwaway(`postgres://patchbay@127.0.0.1:${port}/postgres`, async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      // runuser passes SIGINT on: postgres' "fast" shutdown.
      child.kill("SIGINT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  });
}

/** A database of its own on the server at `serverUrl` (dropped by `stop`). */
export async function freshDatabase(serverUrl: string): Promise<TestPostgres> {
  const { default: pg } = await import("pg");
  const name = `patchbay_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // More databases for the same caller, on the shared server, dropped with this one.
  const more: TestPostgres[] = [];
  return {
    url: url.toString(),
    database: async () => {
      const fresh = await freshDatabase(serverUrl);
      more.push(fresh);
      return fresh.url;
    },
    stop: async () => {
      for (const database of more.splice(0)) await database.stop();
      const drop = new pg.Client({ connectionString: serverUrl });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
    },
  };
}
