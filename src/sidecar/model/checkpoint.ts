// Finds a checkpoint's files and reads its tensor table: config.json plus model.safetensors, or the
// shards named by model.safetensors.index.json. Also resolves a Hugging Face cache layout
// (models--org--name/snapshots/<rev>/) and repo ids against the local cache (never the network).
import { readFile, readdir, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { NativeTensor } from '../native.js';
import { parseModelConfig, type ModelConfigInfo } from './config.js';
import { CheckpointError, readSafetensorsHeader } from './safetensors.js';

export interface Checkpoint {
  dir: string;
  config: ModelConfigInfo;
  rawConfig: Record<string, unknown>;
  tensors: NativeTensor[];
  files: string[];
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/** The newest snapshot of a HF cache repo folder (models--org--name), preferring refs/main. */
async function hfSnapshot(repoDir: string): Promise<string | null> {
  const snaps = path.join(repoDir, 'snapshots');
  if (!(await isDir(snaps))) return null;
  try {
    const ref = (await readFile(path.join(repoDir, 'refs', 'main'), 'utf8')).trim();
    if (ref && (await isDir(path.join(snaps, ref)))) return path.join(snaps, ref);
  } catch {
    /* no refs/main: fall back to the newest snapshot */
  }
  const entries = await readdir(snaps);
  let best: { p: string; t: number } | null = null;
  for (const e of entries) {
    const p = path.join(snaps, e);
    const s = await stat(p);
    if (s.isDirectory() && (!best || s.mtimeMs > best.t)) best = { p, t: s.mtimeMs };
  }
  return best?.p ?? null;
}

export function hfCacheRoot(): string {
  if (process.env.HF_HUB_CACHE) return process.env.HF_HUB_CACHE;
  const home = process.env.HF_HOME ?? path.join(os.homedir(), '.cache', 'huggingface');
  return path.join(home, 'hub');
}

/**
 * --model as users give it: a checkpoint directory, a HF cache repo folder, or a repo id such as
 * baidu/ERNIE-4.5-0.3B-PT found in the local HF cache. Offline: a missing repo is an error that
 * says what to download and where.
 */
export async function resolveModelDir(spec: string): Promise<string> {
  if (await isDir(spec)) {
    if (await exists(path.join(spec, 'config.json'))) return path.resolve(spec);
    const snap = await hfSnapshot(spec);
    if (snap) return snap;
    throw new CheckpointError(`${spec}: no config.json here (and not a Hugging Face cache folder with snapshots/)`);
  }
  if (/^[\w.-]+\/[\w.-]+$/.test(spec)) {
    const repoDir = path.join(hfCacheRoot(), `models--${spec.replace('/', '--')}`);
    const snap = await hfSnapshot(repoDir);
    if (snap) return snap;
    throw new CheckpointError(
      `model '${spec}' is not in the local Hugging Face cache (${repoDir}) and this server never downloads. ` +
        `Download it first, e.g. \`huggingface-cli download ${spec}\` (or \`modelscope download ${spec}\`), ` +
        `or pass --model /path/to/the/checkpoint/directory.`,
    );
  }
  throw new CheckpointError(`${spec}: no such directory`);
}

export async function readCheckpoint(dir: string): Promise<Checkpoint> {
  if (!(await isDir(dir))) throw new CheckpointError(`${dir}: not a readable directory`);
  const cfgFile = path.join(dir, 'config.json');
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(await readFile(cfgFile, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new CheckpointError(`${cfgFile}: cannot read: ${(e as Error).message}`);
  }
  const config = parseModelConfig(cfgFile, raw);
  const files = await weightFiles(dir);
  const tensors: NativeTensor[] = [];
  const seen = new Map<string, string>();
  for (const f of files) {
    for (const t of await readSafetensorsHeader(f)) {
      const prev = seen.get(t.name);
      if (prev) throw new CheckpointError(`${f}: tensor '${t.name}' also appears in ${prev}`);
      seen.set(t.name, f);
      tensors.push(t);
    }
  }
  return { dir, config, rawConfig: raw, tensors, files };
}

async function weightFiles(dir: string): Promise<string[]> {
  const index = path.join(dir, 'model.safetensors.index.json');
  if (await exists(index)) {
    let map: Record<string, unknown>;
    try {
      map = (JSON.parse(await readFile(index, 'utf8')) as { weight_map: Record<string, unknown> }).weight_map;
      if (typeof map !== 'object' || map === null) throw new Error('no weight_map');
    } catch (e) {
      throw new CheckpointError(`${index}: cannot read: ${(e as Error).message}`);
    }
    const shards = [...new Set(Object.values(map).map(String))].sort();
    for (const s of shards) {
      if (s.includes('/') || s.includes('\\')) throw new CheckpointError(`${index}: shard name '${s}' must be a plain file name`);
      if (!(await exists(path.join(dir, s)))) throw new CheckpointError(`${path.join(dir, s)}: shard listed in ${index} is missing`);
    }
    return shards.map((s) => path.join(dir, s));
  }
  const single = path.join(dir, 'model.safetensors');
  if (await exists(single)) return [single];
  throw new CheckpointError(`${dir}: no model.safetensors or model.safetensors.index.json`);
}
