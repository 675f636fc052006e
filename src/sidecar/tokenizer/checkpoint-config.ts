// Reads the JSON side files of a checkpoint's tokenizer: tokenizer_config.json, special_tokens_map.json,
// added_tokens.json, generation_config.json (and config.json for the context length). Every file is
// optional; malformed JSON is an error (a half-read tokenizer config would silently change prompts).

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddedToken } from './added-tokens.js';

export interface TokenizerSideConfig {
  /** `*_token` fields as strings (bos_token, eos_token, cls_token, sep_token, sys_start_token…). */
  namedTokens: Record<string, string>;
  additionalSpecialTokens: string[];
  /** added_tokens.json (content → id) and tokenizer_config.added_tokens_decoder, with HF flags. */
  addedTokens: AddedToken[];
  chatTemplate: string | null;
  chatTemplateSource: string | null;
  addBosToken: boolean | null;
  addEosToken: boolean | null;
  modelMaxLength: number | null;
  /** generation_config.json eos_token_id (number or list). */
  generationEosIds: number[];
  filesRead: string[];
}

type Json = Record<string, unknown>;

async function readJson(dir: string, name: string, read: string[]): Promise<Json | null> {
  let text: string;
  try {
    text = await readFile(join(dir, name), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    read.push(name);
    return v as Json;
  } catch (e) {
    throw new Error(`${join(dir, name)}: ${(e as Error).message}`);
  }
}

/** A token field: "<s>" or an AddedToken dict {"content": "<s>", …}. */
function tokenString(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as Json).content === 'string') return (v as Json).content as string;
  return null;
}

function flag(v: unknown, dflt: boolean): boolean {
  return typeof v === 'boolean' ? v : dflt;
}

export async function readSideConfig(dir: string): Promise<TokenizerSideConfig> {
  const filesRead: string[] = [];
  const [tc, stm, added, gen, cfg] = await Promise.all([
    readJson(dir, 'tokenizer_config.json', filesRead),
    readJson(dir, 'special_tokens_map.json', filesRead),
    readJson(dir, 'added_tokens.json', filesRead),
    readJson(dir, 'generation_config.json', filesRead),
    readJson(dir, 'config.json', filesRead),
  ]);
  const namedTokens: Record<string, string> = {};
  const additional = new Set<string>();
  for (const src of [stm, tc]) {
    if (!src) continue;
    for (const [k, v] of Object.entries(src)) {
      if (k.endsWith('_token')) {
        const s = tokenString(v);
        if (s !== null) namedTokens[k] = s; // tokenizer_config (read last) wins, as in transformers
      }
    }
    const extra = src.additional_special_tokens;
    if (Array.isArray(extra)) for (const t of extra) {
      const s = tokenString(t);
      if (s !== null) additional.add(s);
    }
  }
  const addedTokens: AddedToken[] = [];
  const isSpecialName = (s: string): boolean => additional.has(s) || Object.values(namedTokens).includes(s);
  if (added) {
    for (const [content, id] of Object.entries(added)) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw new Error(`added_tokens.json: bad id for ${content}`);
      // ERNIE lists all of its added tokens as additional_special_tokens.
      addedTokens.push({ id, content, special: isSpecialName(content), lstrip: false, rstrip: false, singleWord: false, normalized: false });
    }
  }
  const decoder = tc?.added_tokens_decoder;
  if (decoder && typeof decoder === 'object') {
    for (const [idStr, v] of Object.entries(decoder as Json)) {
      const t = v as Json;
      const id = Number(idStr);
      if (!Number.isInteger(id) || typeof t.content !== 'string') continue;
      if (addedTokens.some((a) => a.id === id)) continue;
      addedTokens.push({
        id,
        content: t.content,
        special: flag(t.special, false),
        lstrip: flag(t.lstrip, false),
        rstrip: flag(t.rstrip, false),
        singleWord: flag(t.single_word, false),
        normalized: flag(t.normalized, !flag(t.special, false)),
      });
    }
  }
  let chatTemplate: string | null = null;
  let chatTemplateSource: string | null = null;
  const ct = tc?.chat_template;
  if (typeof ct === 'string') {
    chatTemplate = ct;
    chatTemplateSource = 'tokenizer_config.json';
  } else if (Array.isArray(ct)) {
    // [{name, template}]: the one named "default" (transformers' choice), else the first.
    const named = ct as Array<{ name?: unknown; template?: unknown }>;
    const pick = named.find((t) => t.name === 'default') ?? named[0];
    if (pick && typeof pick.template === 'string') {
      chatTemplate = pick.template;
      chatTemplateSource = `tokenizer_config.json (chat_template "${String(pick.name ?? 0)}")`;
    }
  }
  const genEos = gen?.eos_token_id;
  const generationEosIds = typeof genEos === 'number' ? [genEos] : Array.isArray(genEos) ? genEos.filter((x): x is number => typeof x === 'number') : [];
  const mml = tc?.model_max_length;
  const mpe = cfg?.max_position_embeddings;
  // transformers writes a huge sentinel (int(1e30)) when the length is unknown.
  const modelMaxLength = typeof mml === 'number' && mml < 1e12 ? mml : typeof mpe === 'number' ? mpe : null;
  return {
    namedTokens,
    additionalSpecialTokens: [...additional],
    addedTokens,
    chatTemplate,
    chatTemplateSource,
    addBosToken: typeof tc?.add_bos_token === 'boolean' ? tc.add_bos_token : null,
    addEosToken: typeof tc?.add_eos_token === 'boolean' ? tc.add_eos_token : null,
    modelMaxLength,
    generationEosIds,
    filesRead,
  };
}
