// GET /version — vLLM's `{"version": "..."}`; GET /ping — SageMaker's health check, answered exactly as
// /ready (200 when the engine is ready and this gateway is not draining, else 503), outside auth like it.
// POST /v1/embeddings — the model has no embedding output: a clear OpenAI-shaped 400 (vLLM's status for
// a generation model) instead of a bare "no such route".

import type { AppContext } from '../deps.js';
import { ApiError } from '../errors.js';
import { SERVER_VERSION } from '../version.js';

export function versionHandler() {
  return (c: AppContext) => c.json({ version: SERVER_VERSION });
}

export function embeddingsHandler() {
  return (): Response => {
    throw new ApiError(
      400,
      'This model serves no embeddings: it is a text-generation model without an embedding output. ' +
        'Use /v1/chat/completions, /v1/completions or /v1/responses.',
      'model_not_supported',
      'model',
    );
  };
}
