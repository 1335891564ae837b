import type { Session } from "@patchbay/client";
import { element } from "./chat-view";

/**
 * Shows each pending approval with its question, the model's reason, and the tool's own allow
 * and decline labels. The tool does not run until the user answers; declining tells the model.
 */
export function renderApprovals(container: HTMLElement, session: Session): void {
  container.replaceChildren(
    ...session.approvals.map((request) => {
      const card = element("div", "approval");
      card.dataset.testid = "approval";
      card.append(element("strong", "question", request.title));
      if (request.reason) card.append(element("div", "reason", `Reason: ${request.reason}`));
      const allow = element("button", "allow", request.allowTitle) as HTMLButtonElement;
      const decline = element("button", "decline", request.declineTitle) as HTMLButtonElement;
      allow.dataset.testid = "approval-allow";
      decline.dataset.testid = "approval-decline";
      const answer = (allowed: boolean) => {
        allow.disabled = decline.disabled = true;
        void session.decide(request.id, { allowed });
      };
      allow.onclick = () => answer(true);
      decline.onclick = () => answer(false);
      card.append(element("div", "buttons"));
      card.lastElementChild!.append(allow, decline);
      return card;
    }),
  );
}
