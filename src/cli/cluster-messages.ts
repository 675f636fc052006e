// The IPC messages between the `--api-server-count` primary (./cluster.ts) and its gateway processes
// (./gateway-role.ts), over Node's cluster channel (structured JSON). Worker → primary: `listening`
// once its HTTP socket is bound, and the metrics traffic of ./cluster-metrics.ts. Primary → worker:
// `drain` (shut down gracefully: the same as a first SIGTERM), and metrics replies.
import type { FinishedRequest } from '../gateway/request-record.js';
import type { EngineStats } from '../protocol/engine-client.js';
import type { Listen } from './node-server.js';

export type WorkerMessage =
  | { type: 'listening'; address: Listen }
  | { type: 'metrics.observe'; request: FinishedRequest }
  | { type: 'metrics.model'; name: string }
  | { type: 'metrics.render'; seq: number; stats: EngineStats | null };

export type PrimaryMessage = { type: 'drain' } | { type: 'metrics.text'; seq: number; text: string };

/** Environment a gateway process gets from the primary: its slot (1..N), where to listen, how. */
export const ENV_SLOT = 'ERNIE_EDGE_API_SERVER_SLOT';
export const ENV_LISTEN = 'ERNIE_EDGE_API_SERVER_LISTEN'; // JSON Listen
export const ENV_REUSE_PORT = 'ERNIE_EDGE_API_SERVER_REUSE_PORT'; // '1': bind an own SO_REUSEPORT socket

export const isMessage = <T extends { type: string }>(m: unknown): m is T => typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string';
