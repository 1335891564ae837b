// Your tools. Each is a function the model can call; the dispatch worker in src/app.ts hosts
// them for every session of the agent. Replace get_weather with one of your own.
import type { ToolDefinition } from "@patchbay/client";
import { z } from "zod";

const getWeatherParameters = z.object({
  city: z.string().min(1).describe("City name, e.g. Lisbon"),
});

export const getWeather: ToolDefinition<z.infer<typeof getWeatherParameters>> = {
  name: "get_weather",
  description: "Current weather in a city",
  parameters: getWeatherParameters,
  run: async ({ city }) => {
    // A made-up forecast, the same for the same city: call your weather service here.
    const seed = [...city.toLowerCase()].reduce((sum, c) => sum + c.charCodeAt(0), 0);
    const name = city.trim().replace(/\b\w/g, (c) => c.toUpperCase());
    return { city: name, temperature_c: 8 + (seed % 20), sky: ["sunny", "cloudy", "rainy"][seed % 3] };
  },
};

export const tools = [getWeather];
