import type { ApprovalRequest } from "@patchbay/client";
import { useState } from "react";

/**
 * Asks the person to allow or decline a tool call, with the words of the tool's spec: the title
 * (placeholders filled from the arguments), the reason, and the allow and decline titles. The
 * buttons are disabled once one is pressed. Headless, `pb-` class names.
 *
 * @example
 * ```tsx
 * {approvals.map((a) => <ApprovalPrompt key={a.id} approval={a} onDecide={decide} />)}
 * ```
 */
export function ApprovalPrompt({
  approval,
  onDecide,
  className,
}: {
  approval: ApprovalRequest;
  onDecide: (approvalId: string, allowed: boolean) => unknown;
  className?: string;
}) {
  const [answered, setAnswered] = useState(false);
  const answer = (allowed: boolean) => {
    setAnswered(true);
    onDecide(approval.id, allowed);
  };
  return (
    <fieldset className={className ?? "pb-approval"} aria-label={approval.title} data-testid="approval">
      <p className="pb-approval-title">{approval.title}</p>
      {approval.reason ? <p className="pb-approval-reason">{approval.reason}</p> : null}
      <div className="pb-approval-actions">
        <button type="button" disabled={answered} onClick={() => answer(true)} data-testid="approval-allow">
          {approval.allowTitle}
        </button>
        <button
          type="button"
          disabled={answered}
          onClick={() => answer(false)}
          data-testid="approval-decline"
        >
          {approval.declineTitle}
        </button>
      </div>
    </fieldset>
  );
}
