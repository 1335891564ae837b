export { WebhookConfigSchema, webhookConnector } from "./webhook-connector";
