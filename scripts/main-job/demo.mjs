// `npm run demo`: a scripted conversation through the real client against the running stack,
// one step per feature. Each step checks what it shows; any miss fails the demo (it runs in CI).
import { client } from "./modules.mjs";
import { printSession } from "./transcript.mjs";

const STEP_TIMEOUT_MS = 15_000;
const USER = "demo-user";

export async function runDemo(stack, print = console.log) {
  const failures = [];
  const check = (ok, what) => {
    if (!ok) failures.push(what);
    print(`   ${ok ? "ok" : "FAILED"}    ${what}`);
  };
  const backend = new client.Client({
    baseUrl: stack.patchbay.url,
    apiKey: stack.apiKey,
    secret: stack.secret,
  });
  let approvalAnswer = true; // what the "user" answers to the next approval
  const say = async (session, text) => {
    print(`you>     ${text}`);
    const reply = await within(session.responses.create(text), `the reply to "${text}"`);
    print(`agent>   ${reply.text.replaceAll("\n", "\n         ")}`);
    return reply;
  };
  const answerApprovals = (session) =>
    session.on("approval", (request) => void session.decide(request.id, { allowed: approvalAnswer }));

  try {
    const travel = await backend.agent("travel").sessions.create({ userId: USER, metadata: { demo: true } });
    printSession(travel, print);
    answerApprovals(travel);

    heading(print, 1, "A hosted tool: search_flights runs on the flight-booking worker and reports progress");
    const progress = collect(travel, "progress");
    const found = await say(travel, "flights to New York");
    check(found.text.includes("LH400"), "the worker's search result reached the model");
    check(progress.length >= 1, `progress lines were relayed as the tool ran (${progress.length})`);

    heading(print, 2, "An image result: seat_map returns a PNG drawn in code");
    const before = await say(travel, "seat map for LH400");
    const seatMapCall = lastCall(travel, "seat_map");
    const image = seatMapCall?.result?.content.images[0];
    check(
      image?.mimeType === "image/png" && image.data.startsWith("iVBORw0KGgo"),
      "the result carries a PNG",
    );

    heading(print, 3, "An approval answered, then progress, a held call and an idempotent booking");
    const booked = await say(travel, "book 2 seats on LH400 in business");
    check(/Confirmation PB-\w+/.test(booked.text), "the booking ran after the user allowed it");
    check(lastCall(travel, "book_flight")?.held === true, "the call held itself once the seat was held");
    check(stack.worker.bookings.count() === 1, "one row in the SQLite bookings table, keyed by the call id");

    heading(print, 4, "A validation error: 12 seats do not fit the schema, and the model is told why");
    const refused = await say(travel, "book 12 seats on LH400");
    // The schema's message is for the model (the tool result); the user gets a product sentence.
    const refusedCall = lastCall(travel, "book_flight");
    check(
      (refusedCall?.result?.content.text ?? "").includes("less than or equal to 9"),
      "the schema's message reached the model",
    );
    check(!refused.text.includes("schema"), "the user's reply does not quote the schema");
    check(stack.worker.bookings.count() === 1, "nothing was booked");

    heading(print, 5, "An interrupted call: the user stops a search while it runs");
    const reply = travel.responses.create("flights to Lisbon");
    print("you>     flights to Lisbon");
    await within(once(travel, "progress"), "the search to start");
    print("you>     (presses Stop)");
    await travel.interrupt();
    const stopped = await within(reply, "the interrupted reply");
    print(`agent>   ${stopped.text || "(no reply: the turn was interrupted)"}`);
    check(stopped.reason === "interrupted", "the turn ended as interrupted");
    await until(() => lastCall(travel, "search_flights")?.status === "cancelled", "the cancellation");
    check(
      lastCall(travel, "search_flights")?.status === "cancelled",
      "the interruptible search was cancelled",
    );

    heading(print, 6, "Page-style tools: passed to sessions.create({ tools }), they run in this process");
    const assistant = await backend
      .agent("assistant")
      .sessions.create({ userId: USER, tools: demoPageTools() });
    printSession(assistant, print);
    answerApprovals(assistant);
    const time = await say(assistant, "what time is it?");
    check(
      lastCall(assistant, "get_local_context")?.location === "page",
      "get_local_context ran on the client side",
    );
    check(
      time.text.includes(Intl.DateTimeFormat().resolvedOptions().timeZone),
      "its answer reached the model",
    );
    approvalAnswer = false;
    const declined = await say(assistant, "where am I?");
    check(
      lastCall(assistant, "get_location")?.status === "declined",
      "declining the approval kept the tool from running",
    );
    check(declined.text.startsWith("Without your location"), "the model was told it was declined");
    print("   (a connector: the MCP memory server from npm, configured in the agent YAML, no code)");
    await say(assistant, "remember that I prefer window seats");
    check(
      lastCall(assistant, "memory__create_entities")?.status === "completed",
      "the memory connector's tool ran, offered as memory__create_entities",
    );
    const recalled = await say(assistant, "what do you remember?");
    check(recalled.text.includes("I prefer window seats"), "the connector's result reached the model");

    heading(print, 7, "A resumed session: a new client picks the travel session up by its id");
    const items = travel.conversation.length;
    travel.close(); // as a page does on unload; the session lives on on the server
    const other = new client.Client({
      baseUrl: stack.patchbay.url,
      apiKey: stack.apiKey,
      secret: stack.secret,
    });
    try {
      const resumed = await other.agent("travel").sessions.resume(travel.id);
      await until(() => resumed.conversation.length === items, "the replay");
      print(`   resumed ${resumed.id}: ${resumed.conversation.length} conversation items replayed`);
      check(resumed.id === travel.id, "the same session, with its whole conversation replayed");
      printSession(resumed, print);
      const after = await say(resumed, "seat map for LH400");
      check(
        freeSeats(after.text) === freeSeats(before.text) - 2,
        "the session continues, and the seat map shows the booking",
      );
    } finally {
      other.close();
    }
  } catch (error) {
    failures.push(error.message);
    print(`   FAILED    ${error.message}`);
  } finally {
    backend.close();
  }
  return failures;
}

/** Tools a page would bring, made in Node: they run in this process for the session that has them. */
function demoPageTools() {
  return new client.Tools()
    .register({
      name: "get_local_context",
      description: "The person's current date, local time and timezone.",
      displayTitle: "Reading your local time",
      run: () => ({
        now: new Date().toISOString(),
        localTime: new Date().toLocaleTimeString("en-GB"),
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      }),
    })
    .register({
      name: "get_location",
      description: "Where the person is. Only call it when the answer depends on it.",
      parameters: {
        type: "object",
        properties: { reason: { type: "string", description: "why you need it, in a few words" } },
        required: ["reason"],
      },
      displayTitle: "Checking where you are",
      approval: {
        title: "Share your location?",
        reasonArgument: "reason",
        allowTitle: "Share",
        declineTitle: "Not now",
      },
      run: () => ({ latitude: 52.3676, longitude: 4.9041, source: "fixed" }),
    });
}

function heading(print, n, title) {
  print(`\n── ${n}. ${title}`);
}

function lastCall(session, name) {
  return session.conversation.filter((item) => item.type === "tool_call" && item.name === name).at(-1);
}

function freeSeats(text) {
  return Number(/(\d+) of \d+ seats free/.exec(text)?.[1] ?? Number.NaN);
}

function collect(session, event) {
  const seen = [];
  session.on(event, (payload) => seen.push(payload));
  return seen;
}

function once(session, event) {
  return new Promise((resolve) => session.once(event, resolve));
}

/** Resolves when `condition()` holds, checking every 20 ms; fails after STEP_TIMEOUT_MS. */
async function until(condition, what) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `promise`, or a clear failure after STEP_TIMEOUT_MS. */
function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), STEP_TIMEOUT_MS);
  });
  return Promise.race([Promise.resolve(promise), timeout]).finally(() => clearTimeout(timer));
}
