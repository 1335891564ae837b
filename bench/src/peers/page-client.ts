// A page: a `@patchbay/client` session that brings `lookup_order` as a page tool, so the server
// sends the tool's calls over this session's socket. argv: <server base url>
import { Client, Tools } from "@patchbay/client";
import { BENCH_API_KEY, BENCH_SECRET } from "../credentials";
import { BENCH_AGENT, BENCH_USER, LOOKUP_ORDER, lookupOrderText } from "../lookup-order";
import { failed, ready } from "./peer-runtime";

const url = process.argv[2];
if (!url) failed("usage: page-client <server url>");
try {
  const client = new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
  const tools = new Tools().register({
    ...LOOKUP_ORDER,
    run: async ({ order_id }: { order_id: string }) => lookupOrderText(order_id),
  });
  const session = await client.agent(BENCH_AGENT).sessions.create({ tools, userId: BENCH_USER.id });
  ready({ sessionId: session.id });
} catch (error) {
  failed(error);
}
