import type { LanguageModel, ModelRequest } from "@patchbay/models";

/** Wraps a model and keeps every request it was given, for tests that check what the model saw. */
export function recording(model: LanguageModel): LanguageModel & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    provider: model.provider,
    modelId: model.modelId,
    capabilities: model.capabilities,
    requests,
    stream(request) {
      requests.push(structuredClone({ ...request, signal: undefined }));
      return model.stream(request);
    },
  };
}
