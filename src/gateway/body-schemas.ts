// The request schemas a large body may be validated with away from the serving thread, by name: a
// BodyParser that runs in a worker (src/cli/off-thread-codec.ts) gets the name, not the schema (zod
// schemas hold functions, which do not cross threads), and validates with the same object the route
// would have used. /v1/responses is not here: it runs its own checks before its schema's (its route).
import type { z } from 'zod';
import { chatRequestSchema, completionRequestSchema, detokenizeRequestSchema, tokenizeRequestSchema } from './schemas.js';

export const BODY_SCHEMAS = {
  chat: chatRequestSchema,
  completion: completionRequestSchema,
  tokenize: tokenizeRequestSchema,
  detokenize: detokenizeRequestSchema,
} as const;

export type BodySchemaName = keyof typeof BODY_SCHEMAS;
export type BodyOf<N extends BodySchemaName> = z.output<(typeof BODY_SCHEMAS)[N]>;
