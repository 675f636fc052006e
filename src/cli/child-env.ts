// The environment of `serve`'s sidecar child: the parent's, less the secrets it never needs. The sidecar
// reads no API key and downloads nothing; what the gateway half reads (ERNIE_EDGE_API_KEY) and any
// variable named like a credential stay in the parent, so a sidecar crash dump, /proc/PID/environ or a
// child it starts never shows them. The engine secret goes in only when the sidecar listens on TCP.

import { FLAGS } from './flags.js';

/** Variable names that hold credentials by convention (HF_TOKEN, AWS_SECRET_ACCESS_KEY, OPENAI_API_KEY …). */
const CREDENTIAL_NAME = /(^|_)(API_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY|ACCESS_KEY)(_|$)/i;

/** `engineSecret`: set when the sidecar needs it (it listens on tcp://); passed as ERNIE_EDGE_ENGINE_SECRET. */
export function sidecarEnv(env: NodeJS.ProcessEnv, engineSecret?: string): NodeJS.ProcessEnv {
  const flagVars = new Set(FLAGS.flatMap((f) => (f.env ? [f.env] : [])));
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (flagVars.has(name) || CREDENTIAL_NAME.test(name)) continue;
    out[name] = value;
  }
  if (engineSecret) out.ERNIE_EDGE_ENGINE_SECRET = engineSecret;
  return out;
}
