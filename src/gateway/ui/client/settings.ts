// Per-conversation settings: system prompt and sampling parameters, bound to the active conversation.
// Contract: an empty field means "server default" (null) and is left out of the request; out-of-range
// values are clamped to what the gateway accepts (temperature 0–2, top_p (0, 1], max_tokens ≥ 1).

import { byId } from './dom.js';
import type { Conversation, Params } from './store.js';

const FIELDS: { key: keyof Params; id: string; min: number; max: number; int: boolean }[] = [
  { key: 'temperature', id: 'p-temperature', min: 0, max: 2, int: false },
  { key: 'top_p', id: 'p-top-p', min: 0.01, max: 1, int: false },
  { key: 'max_tokens', id: 'p-max-tokens', min: 1, max: 1_000_000, int: true },
];

export function parseParam(raw: string, f: { min: number; max: number; int: boolean }): number | null {
  if (!raw.trim()) return null;
  const v = Number(raw);
  if (!Number.isFinite(v)) return null;
  const clamped = Math.min(f.max, Math.max(f.min, v));
  return f.int ? Math.round(clamped) : clamped;
}

export class Settings {
  private readonly system = byId('system-prompt', HTMLTextAreaElement);
  private conv: Conversation | null = null;

  constructor(onChange: () => void) {
    this.system.addEventListener('input', () => {
      if (!this.conv) return;
      this.conv.system = this.system.value;
      onChange();
    });
    for (const f of FIELDS) {
      const input = byId(f.id, HTMLInputElement);
      input.addEventListener('change', () => {
        if (!this.conv) return;
        this.conv.params[f.key] = parseParam(input.value, f);
        input.value = this.conv.params[f.key]?.toString() ?? '';
        onChange();
      });
    }
  }

  /** Shows `c`'s settings. */
  bind(c: Conversation): void {
    this.conv = c;
    this.system.value = c.system;
    for (const f of FIELDS) byId(f.id, HTMLInputElement).value = c.params[f.key]?.toString() ?? '';
  }
}
