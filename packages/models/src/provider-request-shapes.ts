// Used by the replay tests only (not exported, not bundled): the request bodies of the providers'
// published API references (OpenAI Chat Completions, Anthropic Messages), as strict zod schemas
// of the fields this package sends, plus the rules those references state in prose.
import { z } from "zod";

const text = z.strictObject({ type: z.literal("text"), text: z.string() });

const chatToolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

/** What Gemini's OpenAI-compatible endpoint adds to a tool call: the thought signature to echo. */
const geminiToolCall = chatToolCall.extend({
  extra_content: z
    .strictObject({ google: z.strictObject({ thought_signature: z.string().min(1) }) })
    .optional(),
});

function chatRequest(toolCall: typeof chatToolCall | typeof geminiToolCall) {
  const message = z.discriminatedUnion("role", [
    z.strictObject({ role: z.literal("system"), content: z.string() }),
    z.strictObject({
      role: z.literal("user"),
      content: z.union([
        z.string(),
        z.array(
          z.union([
            text,
            z.strictObject({ type: z.literal("image_url"), image_url: z.strictObject({ url: z.string() }) }),
          ]),
        ),
      ]),
    }),
    z.strictObject({
      role: z.literal("assistant"),
      content: z.string().nullable(),
      tool_calls: z.array(toolCall).min(1).optional(),
    }),
    z.strictObject({ role: z.literal("tool"), tool_call_id: z.string().min(1), content: z.string() }),
  ]);
  return z.strictObject({
    model: z.string().min(1),
    messages: z.array(message).min(1),
    stream: z.literal(true),
    stream_options: z.strictObject({ include_usage: z.boolean() }).optional(),
    tools: z
      .array(
        z.strictObject({
          type: z.literal("function"),
          function: z.strictObject({
            name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
            description: z.string().optional(),
            parameters: z.record(z.string(), z.unknown()).optional(),
            strict: z.boolean().optional(),
          }),
        }),
      )
      .optional(),
    tool_choice: z.unknown().optional(),
    parallel_tool_calls: z.boolean().optional(),
    max_tokens: z.number().int().positive().optional(),
    max_completion_tokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
  });
}

/** `POST /v1/chat/completions` with `stream: true`. */
export const ChatCompletionsRequest = chatRequest(chatToolCall);
/** The same, as Gemini's OpenAI-compatible endpoint takes it. */
export const GeminiChatCompletionsRequest = chatRequest(geminiToolCall);

const image = z.strictObject({
  type: z.literal("image"),
  source: z.union([
    z.strictObject({ type: z.literal("base64"), media_type: z.string(), data: z.string() }),
    z.strictObject({ type: z.literal("url"), url: z.string() }),
  ]),
});
const block = z.discriminatedUnion("type", [
  text,
  image,
  z.strictObject({ type: z.literal("thinking"), thinking: z.string(), signature: z.string().min(1) }),
  z.strictObject({ type: z.literal("redacted_thinking"), data: z.string().min(1) }),
  z.strictObject({
    type: z.literal("tool_use"),
    id: z.string().min(1),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
  }),
  z.strictObject({
    type: z.literal("tool_result"),
    tool_use_id: z.string().min(1),
    content: z.array(z.union([text, image])).optional(),
    is_error: z.boolean().optional(),
  }),
]);

/** `POST /v1/messages` with `stream: true`. */
export const MessagesRequest = z.strictObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z
    .array(z.strictObject({ role: z.enum(["user", "assistant"]), content: z.array(block).min(1) }))
    .min(1),
  system: z.string().optional(),
  stream: z.literal(true),
  tools: z
    .array(
      z.strictObject({
        name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
        description: z.string().optional(),
        input_schema: z.record(z.string(), z.unknown()),
      }),
    )
    .optional(),
  tool_choice: z.record(z.string(), z.unknown()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  thinking: z
    .strictObject({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024) })
    .optional(),
});

type MessagesBody = z.infer<typeof MessagesRequest>;

/**
 * The rules the Messages reference states beside the schema: turns alternate starting with the
 * user; text blocks hold non-whitespace text; every tool_use is answered by a tool_result in the
 * next user message; with thinking enabled, an assistant turn with tool_use starts with its
 * thinking block (unchanged, signature included) and `max_tokens` exceeds the thinking budget.
 */
export function messagesRuleProblems(body: MessagesBody): string[] {
  const problems: string[] = [];
  body.messages.forEach((message, i) => {
    const expected = i % 2 === 0 ? "user" : "assistant";
    if (message.role !== expected)
      problems.push(`messages[${i}].role is ${message.role}, expected ${expected}`);
    message.content.forEach((b, j) => {
      if (b.type === "text" && b.text.trim() === "") {
        problems.push(`messages[${i}].content[${j}]: text content blocks must contain non-whitespace text`);
      }
    });
    const uses = message.content.filter((b) => b.type === "tool_use").map((b) => b.id);
    if (message.role === "assistant" && uses.length > 0) {
      const answered = new Set(
        (body.messages[i + 1]?.content ?? []).flatMap((b) =>
          b.type === "tool_result" ? [b.tool_use_id] : [],
        ),
      );
      for (const id of uses) {
        if (!answered.has(id))
          problems.push(`messages[${i}]: tool_use ${id} has no tool_result in the next message`);
      }
      const first = message.content[0]?.type;
      if (body.thinking && first !== "thinking" && first !== "redacted_thinking") {
        problems.push(
          `messages[${i}]: with thinking enabled, an assistant turn with tool_use must start with a thinking block`,
        );
      }
    }
  });
  if (body.thinking && body.max_tokens <= body.thinking.budget_tokens) {
    problems.push("max_tokens must be greater than thinking.budget_tokens");
  }
  return problems;
}

const geminiPart = z.union([
  z.strictObject({ text: z.string() }),
  z.strictObject({ inlineData: z.strictObject({ mimeType: z.string(), data: z.string() }) }),
  z.strictObject({ fileData: z.strictObject({ mimeType: z.string(), fileUri: z.string() }) }),
  z.strictObject({
    functionCall: z.strictObject({ name: z.string().min(1), args: z.record(z.string(), z.unknown()) }),
    thoughtSignature: z.string().min(1).optional(),
  }),
  z.strictObject({
    functionResponse: z.strictObject({
      name: z.string().min(1),
      response: z.record(z.string(), z.unknown()),
    }),
  }),
]);

/**
 * Gemini's `Schema` (a subset of OpenAPI 3.0): any other key (`$schema`, `additionalProperties`)
 * is refused with 400 "Invalid JSON payload received. Unknown name ...".
 */
const count = z.union([z.number().int().min(0), z.string().regex(/^\d+$/)]);
export const GeminiSchema: z.ZodType = z.lazy(() =>
  z.strictObject({
    type: z.enum(["string", "number", "integer", "boolean", "array", "object"]).optional(),
    format: z.enum(["enum", "date-time"]).optional(),
    title: z.string().optional(),
    description: z.string().optional(),
    nullable: z.boolean().optional(),
    enum: z.array(z.string()).optional(),
    properties: z.record(z.string(), GeminiSchema).optional(),
    required: z.array(z.string()).optional(),
    propertyOrdering: z.array(z.string()).optional(),
    items: GeminiSchema.optional(),
    anyOf: z.array(GeminiSchema).optional(),
    minItems: count.optional(),
    maxItems: count.optional(),
    minLength: count.optional(),
    maxLength: count.optional(),
    minProperties: count.optional(),
    maxProperties: count.optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    pattern: z.string().optional(),
  }),
);

/** `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (GenerateContentRequest). */
export const GenerateContentRequest = z.strictObject({
  contents: z
    .array(z.strictObject({ role: z.enum(["user", "model"]), parts: z.array(geminiPart).min(1) }))
    .min(1),
  systemInstruction: z.strictObject({ parts: z.array(z.strictObject({ text: z.string() })) }).optional(),
  tools: z
    .array(
      z.strictObject({
        functionDeclarations: z.array(
          z.strictObject({
            name: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/),
            description: z.string().optional(),
            parameters: GeminiSchema.optional(),
          }),
        ),
      }),
    )
    .optional(),
  toolConfig: z
    .strictObject({
      functionCallingConfig: z.strictObject({
        mode: z.enum(["AUTO", "ANY", "NONE", "VALIDATED"]),
        allowedFunctionNames: z.array(z.string()).optional(),
      }),
    })
    .optional(),
  generationConfig: z
    .strictObject({
      maxOutputTokens: z.number().int().positive().optional(),
      temperature: z.number().min(0).max(2).optional(),
      thinkingConfig: z
        .strictObject({
          thinkingBudget: z.number().int().optional(),
          includeThoughts: z.boolean().optional(),
        })
        .optional(),
    })
    .optional(),
});

const responsesContent = z.array(
  z.union([
    z.strictObject({ type: z.literal("input_text"), text: z.string() }),
    z.strictObject({ type: z.literal("input_image"), image_url: z.string() }),
  ]),
);

/** `POST /v1/responses` with `stream: true` (stateless: `store: false`). */
export const ResponsesRequest = z.strictObject({
  model: z.string().min(1),
  input: z.array(
    z.union([
      z.strictObject({ role: z.enum(["system", "assistant"]), content: z.string() }),
      z.strictObject({ role: z.literal("user"), content: responsesContent }),
      z.strictObject({
        type: z.literal("function_call"),
        call_id: z.string().min(1),
        name: z.string().min(1),
        arguments: z.string(),
      }),
      z.strictObject({
        type: z.literal("function_call_output"),
        call_id: z.string().min(1),
        output: z.string(),
      }),
      z.strictObject({
        type: z.literal("reasoning"),
        id: z.string().min(1),
        summary: z.array(z.strictObject({ type: z.literal("summary_text"), text: z.string() })),
        encrypted_content: z.string().min(1).optional(),
      }),
    ]),
  ),
  stream: z.literal(true),
  store: z.boolean().optional(),
  include: z.array(z.enum(["reasoning.encrypted_content"])).optional(),
  tools: z
    .array(
      z.strictObject({
        type: z.literal("function"),
        name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()),
        strict: z.boolean(),
      }),
    )
    .optional(),
  tool_choice: z.unknown().optional(),
  parallel_tool_calls: z.boolean().optional(),
  reasoning: z
    .strictObject({
      effort: z.enum(["minimal", "low", "medium", "high"]).optional(),
      summary: z.enum(["auto", "concise", "detailed"]).optional(),
    })
    .optional(),
  max_output_tokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
});
