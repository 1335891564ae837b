import { Tools } from "@patchbay/client";
import { z } from "zod";

/** Where the sample says you are when the browser cannot tell (headless, denied, or no GPS). */
export const FALLBACK_POSITION = { latitude: 52.3676, longitude: 4.9041, place: "Amsterdam" };

export interface SharedPosition {
  latitude: number;
  longitude: number;
  /** `browser` when geolocation answered; `fallback` when the fixed position was used. */
  source: "browser" | "fallback";
  note?: string;
}

/** A few places the sample "finds"; the search takes long enough that a person can press Stop. */
const PLACES = ["Café de Jaren", "Koffie Academie", "Lot Sixty One", "Back to Black"];
export const SEARCH_STEP_MS = 1_000;
export const SEARCH_STEPS = 8;

/**
 * The tools this page brings to its session. They run here, in the browser: the server sends the
 * call over the session's socket and only the answer leaves the page.
 */
export function pageTools(onFallback: (note: string) => void): Tools {
  return new Tools()
    .register({
      name: "get_local_context",
      description: "The person's current date, local time and timezone.",
      parameters: z.object({}),
      displayTitle: "Reading your local time",
      run: () => ({
        now: new Date().toISOString(),
        localTime: new Date().toLocaleTimeString(),
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      }),
    })
    .register({
      name: "get_location",
      description: "Where the person is. Only call it when the answer depends on it.",
      parameters: z.object({
        reason: z.string().describe("why you need it, in a few words"),
      }),
      displayTitle: "Checking where you are",
      // The server asks the user before the call reaches this page; `reason` is shown with it.
      approval: {
        title: "Share your location?",
        reasonArgument: "reason",
        allowTitle: "Share",
        declineTitle: "Not now",
      },
      timeoutMs: 15_000,
      run: async (_args, signal, ctx) => {
        ctx.update("Asking the browser for your position");
        try {
          const { coords } = await currentPosition(signal);
          const shared: SharedPosition = {
            latitude: coords.latitude,
            longitude: coords.longitude,
            source: "browser",
          };
          return shared;
        } catch (error) {
          // Headless browsers and denied permissions end here. Say so rather than fail the chat.
          // The person reads the short notice; the model gets the reason too.
          onFallback(
            `Your browser did not share a position, so a fixed one was used: ${FALLBACK_POSITION.place}.`,
          );
          const note = `Geolocation is unavailable here (${(error as Error).message || "no position"}), so the page shared a fixed position: ${FALLBACK_POSITION.place}.`;
          const { latitude, longitude } = FALLBACK_POSITION;
          const shared: SharedPosition = { latitude, longitude, source: "fallback", note };
          return shared;
        }
      },
    })
    .register({
      name: "search_places",
      description: "Searches places near the person (cafés, shops, museums). Slow: it asks several sources.",
      parameters: z.object({ query: z.string().min(1).describe("what to look for, e.g. cafés") }),
      displayTitle: "Searching places near you",
      // Only reads, so Stop (or a new message) cancels it.
      interruptible: true,
      timeoutMs: 30_000,
      run: async ({ query }, signal, ctx) => {
        for (let step = 1; step <= SEARCH_STEPS; step++) {
          ctx.update(`Looking for ${query}: source ${step} of ${SEARCH_STEPS}`);
          await sleep(SEARCH_STEP_MS, signal);
        }
        return { query, count: PLACES.length, summary: PLACES.join(", ") };
      },
    });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

function currentPosition(signal: AbortSignal): Promise<GeolocationPosition> {
  return new Promise((resolve, reject) => {
    if (!("geolocation" in navigator)) return reject(new Error("this browser has no geolocation"));
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    navigator.geolocation.getCurrentPosition(resolve, (e) => reject(new Error(e.message)), {
      timeout: 3_000,
      maximumAge: 60_000,
    });
  });
}
