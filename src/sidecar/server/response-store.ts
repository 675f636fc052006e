// The sidecar's ResponseStore (src/protocol/engine-client.ts): Responses API responses kept in memory
// for `previous_response_id` and GET/DELETE /v1/responses/{id}, bounded by count and by bytes, least
// recently used (stored or read) dropped first. It lives in the sidecar because the gateway holds no
// state: every gateway process of one sidecar (--api-server-count) sees the same responses; replicas,
// each with their own sidecar, do not see each other's (a load balancer should keep a conversation on
// one replica, or clients send the history themselves). Lost on restart, like OpenAI's store=false.

import { EngineError, type ResponseStore } from '../../protocol/engine-client.js';

export interface ResponseStoreLimits {
  maxEntries: number;
  /** Sum of the stored strings' UTF-16 lengths × 2 (what they hold in memory, near enough). */
  maxBytes: number;
}

export const DEFAULT_RESPONSE_STORE_LIMITS: ResponseStoreLimits = { maxEntries: 10_000, maxBytes: 256 * 1024 * 1024 };

export class MemoryResponseStore implements ResponseStore {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  private readonly entries = new Map<string, string>();
  private bytes = 0;

  constructor(private readonly limits: ResponseStoreLimits = DEFAULT_RESPONSE_STORE_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  get usedBytes(): number {
    return this.bytes;
  }

  async put(id: string, value: string): Promise<void> {
    const size = bytesOf(id, value);
    if (size > this.limits.maxBytes) {
      throw new EngineError('INVALID_REQUEST', `the response is too large to store (${size} bytes; the store holds ${this.limits.maxBytes})`, 'store');
    }
    this.remove(id);
    this.entries.set(id, value);
    this.bytes += size;
    for (const [oldest, v] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= bytesOf(oldest, v);
    }
  }

  async get(id: string): Promise<string | null> {
    const value = this.entries.get(id);
    if (value === undefined) return null;
    this.entries.delete(id);
    this.entries.set(id, value);
    return value;
  }

  async delete(id: string): Promise<boolean> {
    return this.remove(id);
  }

  private remove(id: string): boolean {
    const value = this.entries.get(id);
    if (value === undefined) return false;
    this.entries.delete(id);
    this.bytes -= bytesOf(id, value);
    return true;
  }
}

function bytesOf(id: string, value: string): number {
  return 2 * (id.length + value.length);
}
