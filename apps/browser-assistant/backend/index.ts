export { appDir as browserAssistantConfigDir, type ServePageOptions, servePage } from "./serve-page";
export { tokenEndpoint } from "./token-endpoint";
