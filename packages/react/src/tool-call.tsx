import type { ImageContent, ToolCallItem, ToolCallStatus } from "@patchbay/client";

/** The status of a tool call in words a person reads. */
const STATUS_TEXT: Record<ToolCallStatus, string> = {
  pending: "starting",
  awaiting_approval: "waiting for your answer",
  running: "running",
  completed: "done",
  failed: "failed",
  cancelled: "stopped",
  declined: "declined",
  timed_out: "took too long",
  withdrawn: "not needed",
};

/** The `src` of an image result: its URL, or its bytes as a data URL. */
export function imageSource(image: ImageContent): string {
  return "url" in image ? image.url : `data:${image.mimeType};base64,${image.data}`;
}

/**
 * One tool call as a person sees it: its title, its status in words, its progress while it runs,
 * and the images of its result. Headless: plain elements with `pb-` class names and `data-status`,
 * styled by `@patchbay/react/styles.css` or your own CSS. The model-facing result text is not
 * shown.
 *
 * @example
 * ```tsx
 * <ToolCall item={item} />
 * ```
 */
export function ToolCall({ item, className }: { item: ToolCallItem; className?: string }) {
  const images = item.result?.content.images ?? [];
  const running = item.status === "running" || item.status === "pending";
  return (
    <div
      className={className ?? "pb-tool-call"}
      data-status={item.status}
      data-testid="tool-call"
      aria-busy={running || undefined}
    >
      <span className="pb-tool-title">{item.displayTitle ?? item.name}</span>
      <span className="pb-tool-status">{STATUS_TEXT[item.status]}</span>
      {running && item.progress ? <span className="pb-tool-progress">{item.progress}</span> : null}
      {images.map((image, index) => {
        const key = `${index}:${imageSource(image).slice(-24)}`;
        return (
          <img
            key={key}
            className="pb-tool-image"
            src={imageSource(image)}
            alt={item.displayTitle ?? item.name}
          />
        );
      })}
    </div>
  );
}
