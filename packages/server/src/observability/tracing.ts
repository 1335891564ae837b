import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { FinishReason, LanguageModel } from "@patchbay/models";
import type { ToolCallItem, Usage } from "@patchbay/protocol";

/**
 * The OpenTelemetry tracer name of the server's spans. Spans go through `@opentelemetry/api`
 * only: with no SDK registered they are no-ops and cost next to nothing.
 *
 * @example
 * ```ts
 * // The spans of turns, model calls and tool calls carry this instrumentation scope.
 * const scope = TRACER_NAME; // "@patchbay/server"
 * ```
 */
export const TRACER_NAME = "@patchbay/server";

// Tool calls that ended in one of these are errors in the trace (declined and withdrawn are not:
// the user or the turn chose them).
const FAILED_TOOL_STATUSES = new Set(["failed", "timed_out", "cancelled"]);

/**
 * The spans of one turn: `patchbay.turn`, a child `chat <model>` span for each model call (GenAI
 * semantic conventions: `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
 * `gen_ai.usage.*`, `gen_ai.response.finish_reasons`) and an `execute_tool <name>` span for each
 * tool call (`gen_ai.tool.name`, `gen_ai.tool.call.id`, `patchbay.tool.location`,
 * `patchbay.tool.outcome`, `patchbay.tool.attempt`).
 */
export class TurnTrace {
  private readonly span: Span;
  private readonly context: Context;
  private ended = false;

  constructor(attributes: { sessionId: string; agent: string; responseId: string }) {
    this.span = trace.getTracer(TRACER_NAME).startSpan("patchbay.turn", {
      kind: SpanKind.INTERNAL,
      attributes: {
        "patchbay.session.id": attributes.sessionId,
        "patchbay.agent": attributes.agent,
        "patchbay.response.id": attributes.responseId,
      },
    });
    this.context = trace.setSpan(context.active(), this.span);
  }

  /** Starts the span of one model call; end it with `finish` or `fail`. */
  modelCall(model: LanguageModel): ModelCallTrace {
    const span = trace.getTracer(TRACER_NAME).startSpan(
      `chat ${model.modelId}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": model.provider,
          "gen_ai.request.model": model.modelId,
        },
      },
      this.context,
    );
    return new ModelCallTrace(span);
  }

  /** Records the tool calls of a round, each from its creation to now, with how it ended. */
  toolCalls(items: readonly ToolCallItem[]): void {
    const tracer = trace.getTracer(TRACER_NAME);
    for (const item of items) {
      const attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": item.name,
        "gen_ai.tool.call.id": item.id,
        "patchbay.tool.outcome": item.status,
        "patchbay.tool.attempt": item.attempt,
      };
      if (item.location !== undefined) attributes["patchbay.tool.location"] = item.location;
      const span = tracer.startSpan(
        `execute_tool ${item.name}`,
        { kind: SpanKind.INTERNAL, attributes, startTime: item.createdAt },
        this.context,
      );
      if (FAILED_TOOL_STATUSES.has(item.status)) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: `the tool call ended ${item.status}` });
        span.setAttribute("error.type", item.status);
      }
      span.end();
    }
  }

  /** Ends the turn's span with its outcome, the reason it completed and the tokens of all calls. */
  end(outcome: "completed" | "interrupted" | "failed", detail: string, usage: Usage): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttributes({
      "patchbay.turn.outcome": outcome,
      "patchbay.turn.reason": detail,
      "gen_ai.usage.input_tokens": usage.inputTokens,
      "gen_ai.usage.output_tokens": usage.outputTokens,
    });
    if (outcome === "failed") {
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: detail });
      this.span.setAttribute("error.type", detail);
    }
    this.span.end();
  }
}

/** The span of one model call. */
export class ModelCallTrace {
  private ended = false;

  constructor(private readonly span: Span) {}

  /** The call finished: its finish reason and tokens. */
  finish(reason: FinishReason, usage: Usage): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttributes({
      "gen_ai.response.finish_reasons": [reason],
      "gen_ai.usage.input_tokens": usage.inputTokens,
      "gen_ai.usage.output_tokens": usage.outputTokens,
    });
    this.span.end();
  }

  /** The call was cut short by an interrupt: not an error of the provider. */
  interrupted(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute("patchbay.interrupted", true);
    this.span.end();
  }

  /** The call failed; `code` is the ModelError code (`internal` for anything else). */
  fail(code: string, error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (error !== undefined) this.span.recordException(error);
    this.span.setAttribute("error.type", code);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    this.span.end();
  }
}
