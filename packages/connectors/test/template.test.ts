// Runs the contributor template's own tests (packages/connectors/template/), so the template
// stays a working connector.
import "../template/src/webhook-connector.test";
