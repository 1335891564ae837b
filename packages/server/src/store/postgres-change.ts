import type { SessionEvent } from "@patchbay/protocol";
import type { PoolClient } from "pg";
import { LeaseLostError } from "../errors";
import { ChangeJson } from "./change-json";
import type { CommitResult, SessionChange } from "./store";

// How PostgresStore writes one SessionChange inside its transaction (the rest of the store is
// in postgres-store.ts: opening, the schema lock, reads).

/** One change, in the order the SQLite store applies it, with a statement per table, not per row. */
export async function applyChange(
  client: PoolClient,
  sessionId: string,
  change: SessionChange,
): Promise<CommitResult> {
  if (change.fence !== undefined) {
    // FOR SHARE: a takeover's UPDATE of the row waits for this commit, and a commit after the
    // takeover sees the new token. Either way no write of an older token lands after a newer one.
    const { rows } = await client.query<{ node_id: string; token: string }>(
      "SELECT node_id, token FROM session_leases WHERE session_id = $1 FOR SHARE",
      [sessionId],
    );
    const row = rows[0];
    if (!row) throw new LeaseLostError(sessionId, `no lease, fence ${change.fence}`);
    if (Number(row.token) !== change.fence)
      throw new LeaseLostError(sessionId, `fence ${change.fence}, lease now ${row.token} on ${row.node_id}`);
  }
  const json = new ChangeJson();
  if (change.command) {
    const inserted = await client.query(
      "INSERT INTO commands (session_id, command_id, kind, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
      [sessionId, change.command.commandId, change.command.kind, Date.now()],
    );
    if ((inserted.rowCount ?? 0) === 0) return { events: [], duplicate: true };
  }
  if (change.items && change.items.length > 0) {
    // One row per id (the last body wins, the first occurrence keeps its place), as the SQLite
    // store's row-by-row upsert leaves it; ON CONFLICT may touch a row only once per statement.
    const bodies = new Map<string, string>();
    for (const item of change.items) bodies.set(item.id, json.item(item));
    await client.query(
      `INSERT INTO items (session_id, item_id, position, body)
       SELECT $1, t.id, (SELECT COALESCE(MAX(position), 0) FROM items WHERE session_id = $1) + t.ord, t.body
       FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(id, body, ord)
       ON CONFLICT (session_id, item_id) DO UPDATE SET body = excluded.body`,
      [sessionId, [...bodies.keys()], [...bodies.values()]],
    );
  }
  if (change.pageTools) {
    await client.query("UPDATE sessions SET page_tools = $1 WHERE id = $2", [
      JSON.stringify(change.pageTools),
      sessionId,
    ]);
  }
  if (change.turn) {
    const t = change.turn;
    await client.query(
      `INSERT INTO turns (response_id, session_id, command_id, status, started_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (response_id) DO UPDATE SET status = excluded.status, ended_at = excluded.ended_at`,
      [t.responseId, t.sessionId, t.commandId ?? null, t.status, t.startedAt, t.endedAt ?? null],
    );
  }
  if (change.pendingCalls && change.pendingCalls.length > 0) {
    const bodies = new Map<string, string>();
    for (const call of change.pendingCalls) bodies.set(call.callId, JSON.stringify(call));
    await client.query(
      `INSERT INTO pending_calls (call_id, session_id, body) SELECT t.id, $1, t.body FROM unnest($2::text[], $3::text[]) AS t(id, body)
       ON CONFLICT (call_id) DO UPDATE SET body = excluded.body`,
      [sessionId, [...bodies.keys()], [...bodies.values()]],
    );
  }
  if (change.settledCalls && change.settledCalls.length > 0) {
    await client.query("DELETE FROM pending_calls WHERE call_id = ANY($1::text[])", [change.settledCalls]);
  }
  for (const approval of change.approvals ?? []) {
    await client.query(
      `INSERT INTO approvals (id, session_id, body, outcome, decided_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, outcome = excluded.outcome, decided_at = excluded.decided_at`,
      [
        approval.request.id,
        sessionId,
        JSON.stringify(approval),
        approval.outcome ?? null,
        approval.decidedAt ?? null,
      ],
    );
  }
  const events: SessionEvent[] = [];
  if (change.events && change.events.length > 0) {
    const bumped = await client.query<{ last_seq: string }>(
      "UPDATE sessions SET last_seq = last_seq + $2 WHERE id = $1 RETURNING last_seq",
      [sessionId, change.events.length],
    );
    if (!bumped.rows[0]) throw new Error(`session ${sessionId} does not exist`);
    let seq = Number(bumped.rows[0].last_seq) - change.events.length;
    const seqs: number[] = [];
    const types: string[] = [];
    const bodies: string[] = [];
    for (const draft of change.events) {
      seq += 1;
      const event = { ...draft, sessionId, seq } as SessionEvent;
      seqs.push(seq);
      types.push(event.type);
      bodies.push(json.event(event));
      events.push(event);
    }
    await client.query(
      "INSERT INTO events (session_id, seq, type, body) SELECT $1, t.seq, t.type, t.body FROM unnest($2::bigint[], $3::text[], $4::text[]) AS t(seq, type, body)",
      [sessionId, seqs, types, bodies],
    );
  }
  return { events, duplicate: false };
}
