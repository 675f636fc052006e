// GET /v1/models and GET /v1/models/:id — OpenAI's model objects (+ vLLM's root / max_model_len).
// `root` is the served name: where the sidecar loaded the model from (a path on its host) stays private.

import type { EngineClient } from '../../protocol/engine-client.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { ApiError } from '../errors.js';

async function modelObject(engine: EngineClient, deps: RouteDeps) {
  const { info, name } = await resolveModel(engine, deps, undefined);
  return { id: name, object: 'model' as const, created: info.createdAt, owned_by: 'ernie-edge', root: name, parent: null, max_model_len: info.maxModelLen };
}

export function listModelsHandler(deps: RouteDeps) {
  return async (c: AppContext) => c.json({ object: 'list', data: [await modelObject(c.var.engine, deps)] });
}

export function getModelHandler(deps: RouteDeps) {
  return async (c: AppContext) => {
    const model = await modelObject(c.var.engine, deps);
    const id = c.req.param('id');
    if (id !== model.id) throw new ApiError(404, `The model \`${(id ?? '').slice(0, 200)}\` does not exist.`, 'model_not_found', 'model');
    return c.json(model);
  };
}
