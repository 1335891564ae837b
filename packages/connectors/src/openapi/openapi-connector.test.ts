import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { ToolExecutor } from "@patchbay/tools";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConnectorEntriesSchema } from "../connector-entry";
import { ConnectorSet } from "../connector-set";
import { prepareConnectors } from "../prepare-connectors";
import { openApiConnector } from "./openapi-connector";

const SPEC = fileURLToPath(new URL("../../test/fixtures/pets-openapi.json", import.meta.url));
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const pets = new Map<number, { id: number; name: string; tag?: string }>([[1, { id: 1, name: "Rex" }]]);
const seen: { method: string; url: string; auth: string | undefined }[] = [];
let server: Server;
let origin: string;
const sets: ConnectorSet[] = [];

async function body(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/openapi.json")
      return void res.writeHead(200, { "content-type": "application/json" }).end(readFileSync(SPEC));
    seen.push({ method: req.method ?? "", url: url.pathname + url.search, auth: req.headers.authorization });
    if (req.headers.authorization !== "Bearer pets-token")
      return void res.writeHead(401).end("missing token");
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    const one = /^\/v1\/pets\/(\d+)(\/photo)?$/.exec(url.pathname);
    if (url.pathname === "/v1/pets" && req.method === "GET")
      return json(200, [...pets.values()].slice(0, Number(url.searchParams.get("limit") ?? 100)));
    if (url.pathname === "/v1/pets" && req.method === "POST") {
      const pet = { id: pets.size + 1, ...JSON.parse(await body(req)) };
      pets.set(pet.id, pet);
      return json(201, pet);
    }
    if (one) {
      const pet = pets.get(Number(one[1]));
      if (!pet) return json(404, { error: `no pet ${one[1]}` });
      if (one[2]) return void res.writeHead(200, { "content-type": "image/png" }).end(PNG);
      if (req.method === "DELETE") {
        pets.delete(pet.id);
        return void res.writeHead(204).end();
      }
      return json(200, pet);
    }
    json(404, { error: "no route" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function start(openapi: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const entries = ConnectorEntriesSchema.parse([{ name: "pets", openapi, ...extra }]);
  const set = await ConnectorSet.start(
    prepareConnectors(entries, { kinds: [openApiConnector], env: { PETS_TOKEN: "pets-token" } }),
  );
  sets.push(set);
  return set;
}

describe("the OpenAPI connector against a real HTTP server", () => {
  it("turns every operation into a tool with its parameters and body as the schema", async () => {
    const set = await start({
      spec: `${origin}/openapi.json`,
      headers: { authorization: "Bearer ${PETS_TOKEN}" },
    });
    expect(set.tools.names()).toEqual([
      "pets__listPets",
      "pets__createPet",
      "pets__showPet",
      "pets__delete_pets_petId",
      "pets__petPhoto",
    ]);
    const create = set.tools.list().find((spec) => spec.name === "pets__createPet")!;
    expect(create.parameters).toMatchObject({
      properties: { body: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } },
      required: ["body"],
    });
    expect(create.approval).toEqual({ title: "Allow pets to run createPet?" });
    expect(set.tools.list().find((spec) => spec.name === "pets__showPet")).toMatchObject({
      parameters: {
        properties: { petId: { type: "integer", description: "The pet's id" } },
        required: ["petId"],
      },
    });
    expect(set.tools.list().find((spec) => spec.name === "pets__showPet")?.approval).toBeUndefined();
    // A UI shows the operation's summary while the call runs, not its id.
    const titles = Object.fromEntries(set.tools.list().map((spec) => [spec.name, spec.displayTitle]));
    expect(titles).toMatchObject({
      pets__listPets: "List pets",
      pets__createPet: "Add a pet",
      pets__delete_pets_petId: "Remove a pet",
    });
  });

  it("calls the API with the base URL, parameters, body and auth header; non-2xx is a tool error", async () => {
    const set = await start(
      { spec: SPEC, base_url: `${origin}/v1`, headers: { authorization: "Bearer ${PETS_TOKEN}" } },
      { approval: { tools: [] } },
    );
    const executor = new ToolExecutor({ tools: set.tools });
    const created = await executor.execute({
      id: "o1",
      name: "pets__createPet",
      arguments: { body: { name: "Tom", tag: "cat" } },
    });
    expect(JSON.parse(created.content.text)).toEqual({ id: 2, name: "Tom", tag: "cat" });
    const listed = await executor.execute({ id: "o2", name: "pets__listPets", arguments: { limit: 1 } });
    expect(JSON.parse(listed.content.text)).toEqual([{ id: 1, name: "Rex" }]);
    expect(seen.at(-1)).toEqual({ method: "GET", url: "/v1/pets?limit=1", auth: "Bearer pets-token" });
    const missing = await executor.execute({ id: "o3", name: "pets__showPet", arguments: { petId: 99 } });
    expect(missing).toMatchObject({ outcome: "failed", error: { code: "http_404" } });
    expect(missing.content.text).toBe('The API answered HTTP 404 Not Found: {"error":"no pet 99"}');
    const photo = await executor.execute({ id: "o4", name: "pets__petPhoto", arguments: { petId: 1 } });
    expect(photo.content.images).toEqual([expect.objectContaining({ mimeType: "image/png" })]);
    const bad = await executor.execute({ id: "o5", name: "pets__showPet", arguments: { petId: "one" } });
    expect(bad.outcome).toBe("invalid_arguments");
  });

  it("fails closed on a typo in approval.tools: the writes still ask, and the typo is logged", async () => {
    const warned: { message: string; fields?: Record<string, unknown> }[] = [];
    const entries = ConnectorEntriesSchema.parse([
      {
        name: "pets",
        openapi: { spec: SPEC, base_url: `${origin}/v1`, headers: { authorization: "Bearer ${PETS_TOKEN}" } },
        approval: { tools: ["creatPet"] },
      },
    ]);
    const set = await ConnectorSet.start(
      prepareConnectors(entries, { kinds: [openApiConnector], env: { PETS_TOKEN: "pets-token" } }),
      {
        logger: {
          debug() {},
          info() {},
          warn: (message, fields) => warned.push({ message, ...(fields ? { fields } : {}) }),
          error() {},
        },
      },
    );
    sets.push(set);
    const approval = (name: string) => set.tools.list().find((spec) => spec.name === name)?.approval;
    expect(approval("pets__createPet")).toEqual({ title: "Allow pets to run createPet?" });
    expect(approval("pets__delete_pets_petId")).toBeDefined();
    expect(approval("pets__listPets")).toBeUndefined();
    const before = seen.length;
    const created = await new ToolExecutor({ tools: set.tools }).execute({
      id: "t1",
      name: "pets__createPet",
      arguments: { body: { name: "Typo" } },
    });
    expect(created).toMatchObject({ outcome: "declined", error: { code: "approval_unavailable" } });
    expect(seen.slice(before).filter((request) => request.method === "POST")).toEqual([]);
    expect(warned).toContainEqual({
      message:
        "connector approval list names a tool the service does not offer: the tools that ask by default still ask",
      fields: expect.objectContaining({
        connector: "pets",
        tools: ["creatPet"],
        known: ["listPets", "createPet", "showPet", "delete_pets_petId", "petPhoto"],
      }),
    });
  });

  it("is down with the reason when the document cannot be read or has no base URL", async () => {
    const set = await start({ spec: `${origin}/missing.json` });
    expect(set.status()[0]).toMatchObject({
      state: "down",
      reason: `could not connect: the OpenAPI document ${origin}/missing.json answered HTTP 401`,
    });
    const local = await start({ spec: SPEC });
    expect(local.status()[0]?.reason).toBe(
      "could not connect: no base URL: set 'base_url' or give the document a 'servers' entry with an http(s) URL",
    );
  });
});

describe("the OpenAPI connector's requests stay within the API", () => {
  it("follows a redirect within the API's origin, refuses one to another host, and refuses '..' as a path parameter", async () => {
    const elsewhere: { url: string; key: string | undefined }[] = [];
    const other = createServer((req, res) => {
      elsewhere.push({ url: req.url ?? "", key: req.headers["x-api-key"] as string | undefined });
      res.writeHead(200, { "content-type": "application/json" }).end('{"internal":"admin data"}');
    });
    const api: string[] = [];
    const own = createServer((req, res) => {
      api.push(`${req.method} ${req.url} ${req.headers["x-api-key"] ?? "-"}`);
      const json = (value: unknown) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.url === "/openapi.json") {
        return json({
          openapi: "3.0.3",
          info: { title: "t", version: "1" },
          servers: [{ url: `http://127.0.0.1:${(own.address() as AddressInfo).port}/v1` }],
          paths: {
            "/out": { get: { operationId: "goOut", responses: { "200": { description: "ok" } } } },
            "/in": { get: { operationId: "goIn", responses: { "200": { description: "ok" } } } },
            "/things/{id}": {
              get: {
                operationId: "getThing",
                parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
                responses: { "200": { description: "ok" } },
              },
            },
          },
        });
      }
      if (req.url === "/v1/out")
        return void res
          .writeHead(302, { location: `http://127.0.0.1:${(other.address() as AddressInfo).port}/admin` })
          .end();
      if (req.url === "/v1/in") return void res.writeHead(302, { location: "/v1/things/7" }).end();
      if (req.url?.startsWith("/v1/things/")) return json({ thing: req.url.slice("/v1/things/".length) });
      json({ at: req.url });
    });
    await Promise.all([other, own].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", r))));
    try {
      const port = (own.address() as AddressInfo).port;
      const entries = ConnectorEntriesSchema.parse([
        {
          name: "svc",
          openapi: { spec: `http://127.0.0.1:${port}/openapi.json`, headers: { "x-api-key": "${SVC_KEY}" } },
        },
      ]);
      const set = await ConnectorSet.start(
        prepareConnectors(entries, { kinds: [openApiConnector], env: { SVC_KEY: "k-123456" } }),
      );
      sets.push(set);
      const executor = new ToolExecutor({ tools: set.tools });
      const call = async (name: string, args: Record<string, unknown> = {}) =>
        executor.execute({ id: `${name}-${JSON.stringify(args)}`, name: `svc__${name}`, arguments: args });

      expect((await call("goIn")).content.text).toBe('{"thing":"7"}');
      const out = await call("goOut");
      expect(out).toMatchObject({ outcome: "failed", error: { code: "http_redirect_refused" } });
      expect(elsewhere).toEqual([]);
      const up = await call("getThing", { id: ".." });
      expect(up).toMatchObject({ outcome: "failed", error: { code: "invalid_arguments" } });
      expect((await call("getThing", { id: "a.b" })).content.text).toBe('{"thing":"a.b"}');
      expect(api.filter((line) => line.startsWith("GET /v1/ ") || line === "GET /v1 k-123456")).toEqual([]);
    } finally {
      await Promise.all([other, own].map((s) => new Promise<void>((r) => s.close(() => r()))));
    }
  });
});
