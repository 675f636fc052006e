// Checkpoint loading: every kind of bad input gives an error naming the file and the problem (never
// a crash or a hang), and the valid variants (shards, F32, F16, explicit lm_head) load correctly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import { loadModel } from '../../src/sidecar/model/load.js';
import { safetensorsHeader } from '../../src/sidecar/model/safetensors.js';
import { GOLDEN, maxAbsDiff, readF32, readGolden } from './helpers.js';

const TINY = path.join(GOLDEN, 'tiny');
const golden = readGolden('tiny');
const prompt = golden.prompts[1]!;
let root: string;

interface Raw {
  name: string;
  dtype: 'BF16' | 'F16' | 'F32' | 'I32';
  shape: number[];
  data: Buffer;
}

async function tinyTensors(): Promise<Raw[]> {
  const ck = await readCheckpoint(TINY);
  const file = readFileSync(ck.files[0]!);
  return ck.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, data: file.subarray(t.offset, t.offset + t.nbytes) }));
}

async function writeCkpt(dir: string, tensors: Raw[], config?: Record<string, unknown>, file = 'model.safetensors'): Promise<string> {
  const header = safetensorsHeader(tensors.map((t) => ({ name: t.name, dtype: t.dtype as 'BF16', shape: t.shape, nbytes: t.data.length })));
  await writeFile(path.join(dir, file), Buffer.concat([header, ...tensors.map((t) => t.data)]));
  const cfg = config ?? JSON.parse(readFileSync(path.join(TINY, 'config.json'), 'utf8'));
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(cfg));
  return dir;
}

async function fresh(name: string): Promise<string> {
  const d = path.join(root, name);
  await rm(d, { recursive: true, force: true });
  await import('node:fs/promises').then((fs) => fs.mkdir(d, { recursive: true }));
  return d;
}

async function logits(dir: string): Promise<Float32Array> {
  const m = (await loadModel(dir, { kvBlocks: 4 })).model;
  try {
    return await m.forward([{ tokens: Int32Array.from(prompt.prompt), startPos: 0, blockTable: Int32Array.from([0]), logits: 1 }]);
  } finally {
    m.close();
  }
}

const bf16ToF32 = (b: Buffer) => {
  const out = Buffer.alloc(b.length * 2);
  for (let i = 0; i < b.length / 2; i++) out.writeUInt32LE(b.readUInt16LE(2 * i) << 16 >>> 0, 4 * i);
  return out;
};
const f32ToF16 = (b: Buffer) => {
  const f = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  const out = Buffer.alloc(f.length * 2);
  // Node 20 has no Float16Array: round to half by hand (RNE, normal range is enough here).
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < f.length; i++) {
    const x = u[i]!, sign = (x >>> 16) & 0x8000, e = ((x >>> 23) & 0xff) - 127 + 15;
    let m = x & 0x7fffff, h: number;
    if (e <= 0) h = sign; // flush tiny values (none of this model's weights are that small)
    else {
      m = m + 0xfff + ((m >>> 13) & 1);
      h = sign | ((e + (m >>> 23)) << 10) | ((m >>> 13) & 0x3ff);
    }
    out.writeUInt16LE(h, 2 * i);
  }
  return out;
};

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'ernie-ckpt-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('bad checkpoints give errors that name the file and the problem', () => {
  it('unreadable or missing directory', async () => {
    await expect(loadModel(path.join(root, 'nope'), { kvBlocks: 1 })).rejects.toThrow(/nope: not a readable directory/);
  });

  it('no weights file', async () => {
    const d = await fresh('noweights');
    await copyFile(path.join(TINY, 'config.json'), path.join(d, 'config.json'));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/noweights: no model.safetensors/);
  });

  it('truncated safetensors file', async () => {
    const d = await writeCkpt(await fresh('truncated'), await tinyTensors());
    await truncate(path.join(d, 'model.safetensors'), 100_000);
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/truncated[/\\]model\.safetensors: tensor '.*': data_offsets end \d+ lies past the end of the data .*truncated or corrupt/);
  });

  it('file shorter than its header length', async () => {
    const d = await fresh('shorthdr');
    const b = Buffer.alloc(16);
    b.writeBigUInt64LE(1000n);
    await writeFile(path.join(d, 'model.safetensors'), b);
    await copyFile(path.join(TINY, 'config.json'), path.join(d, 'config.json'));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/model\.safetensors: corrupt: header length 1000 does not fit/);
  });

  it('corrupt header JSON', async () => {
    const d = await fresh('badjson');
    const j = Buffer.from('{"a": [1, 2');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(j.length));
    await writeFile(path.join(d, 'model.safetensors'), Buffer.concat([len, j, Buffer.alloc(64)]));
    await copyFile(path.join(TINY, 'config.json'), path.join(d, 'config.json'));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/model\.safetensors: corrupt: header is not valid JSON/);
  });

  it('header offsets that lie about the size', async () => {
    const d = await writeCkpt(await fresh('lying'), await tinyTensors());
    const f = path.join(d, 'model.safetensors');
    const buf = readFileSync(f);
    const n = Number(buf.readBigUInt64LE(0));
    const hdr = JSON.parse(buf.subarray(8, 8 + n).toString());
    hdr['model.norm.weight'].data_offsets[1] += 2; // claims one element more than the shape holds
    const j = Buffer.from(JSON.stringify(hdr).padEnd(n, ' '));
    await writeFile(f, Buffer.concat([buf.subarray(0, 8), j.subarray(0, n), buf.subarray(8 + n)]));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/tensor 'model\.norm\.weight': data_offsets .* hold \d+ bytes but shape \[256\] in BF16 needs 512/);
  });

  it('overlapping tensors', async () => {
    const d = await writeCkpt(await fresh('overlap'), await tinyTensors());
    const f = path.join(d, 'model.safetensors');
    const buf = readFileSync(f);
    const n = Number(buf.readBigUInt64LE(0));
    const hdr = JSON.parse(buf.subarray(8, 8 + n).toString());
    hdr['model.norm.weight'].data_offsets = [0, 512];
    const j = Buffer.from(JSON.stringify(hdr).padEnd(n, ' '));
    await writeFile(f, Buffer.concat([buf.subarray(0, 8), j.subarray(0, n), buf.subarray(8 + n)]));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/corrupt: tensors '.*' and '.*' overlap/);
  });

  it('a tensor with the wrong shape', async () => {
    const ts = (await tinyTensors()).map((t) => (t.name === 'model.layers.1.self_attn.k_proj.weight' ? { ...t, shape: [128, 512] } : t));
    const d = await writeCkpt(await fresh('shape'), ts);
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/shape[/\\]model\.safetensors: tensor 'model\.layers\.1\.self_attn\.k_proj\.weight' has shape \[128, 512\], expected \[256, 256\] from config\.json/);
  });

  it('a tensor with an unsupported dtype', async () => {
    const ts = (await tinyTensors()).map((t) => (t.name === 'model.norm.weight' ? { ...t, dtype: 'I32' as const, shape: [128] } : t));
    const d = await writeCkpt(await fresh('dtype'), ts);
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/tensor 'model\.norm\.weight': unsupported dtype I32/);
  });

  it('a missing tensor', async () => {
    const d = await writeCkpt(await fresh('missing'), (await tinyTensors()).filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight'));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/checkpoint has no tensor 'model\.layers\.1\.mlp\.up_proj\.weight'/);
  });

  it('an unknown architecture', async () => {
    const cfg = { ...JSON.parse(readFileSync(path.join(TINY, 'config.json'), 'utf8')), architectures: ['Qwen3MoeForCausalLM'] };
    const d = await writeCkpt(await fresh('arch'), await tinyTensors(), cfg);
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/arch[/\\]config\.json: unsupported architecture \["Qwen3MoeForCausalLM"\]/);
  });

  it('a shard listed in the index but missing', async () => {
    const d = await writeCkpt(await fresh('shardmissing'), await tinyTensors(), undefined, 'model-00001-of-00002.safetensors');
    await writeFile(path.join(d, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' } }));
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/model-00002-of-00002\.safetensors: shard listed in .* is missing/);
  });

  it('an unreadable config.json', async () => {
    const d = await writeCkpt(await fresh('unreadable'), await tinyTensors());
    await writeFile(path.join(d, 'config.json'), '{ not json');
    await expect(loadModel(d, { kvBlocks: 1 })).rejects.toThrow(/unreadable[/\\]config\.json: cannot read/);
    await chmod(path.join(d, 'config.json'), 0o644);
  });
});

describe('valid checkpoint variants load to the same model', () => {
  let ref: Float32Array;
  beforeAll(async () => {
    ref = await logits(TINY);
    expect(maxAbsDiff(ref, readF32('tiny', prompt.last_logits_file))).toBeLessThan(2e-2);
  });

  it('sharded via model.safetensors.index.json (bit-exact)', async () => {
    const ts = await tinyTensors();
    const d = await fresh('sharded');
    const a = ts.filter((_, i) => i % 2 === 0), b = ts.filter((_, i) => i % 2 === 1);
    await writeCkpt(d, a, undefined, 'model-00001-of-00002.safetensors');
    await writeCkpt(d, b, undefined, 'model-00002-of-00002.safetensors');
    const map = Object.fromEntries([...a.map((t) => [t.name, 'model-00001-of-00002.safetensors']), ...b.map((t) => [t.name, 'model-00002-of-00002.safetensors'])]);
    await writeFile(path.join(d, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: map }));
    expect(maxAbsDiff(await logits(d), ref)).toBe(0);
  });

  it('F32 tensors (bit-exact: every bf16 value is exact in f32)', async () => {
    const ts = (await tinyTensors()).map((t) => ({ ...t, dtype: 'F32' as const, data: bf16ToF32(t.data) }));
    expect(maxAbsDiff(await logits(await writeCkpt(await fresh('f32'), ts)), ref)).toBe(0);
  });

  it('F16 tensors (converted to bf16 at load; close to the reference)', async () => {
    const ts = (await tinyTensors()).map((t) => ({ ...t, dtype: 'F16' as const, data: f32ToF16(bf16ToF32(t.data)) }));
    const got = await logits(await writeCkpt(await fresh('f16'), ts));
    expect(maxAbsDiff(got, readF32('tiny', prompt.last_logits_file))).toBeLessThan(2e-2);
  });

  it('an explicit, untied lm_head.weight', async () => {
    const ts = await tinyTensors();
    const emb = ts.find((t) => t.name === 'model.embed_tokens.weight')!;
    const cfg = { ...JSON.parse(readFileSync(path.join(TINY, 'config.json'), 'utf8')), tie_word_embeddings: false };
    const d = await writeCkpt(await fresh('untied'), [...ts, { ...emb, name: 'lm_head.weight' }], cfg);
    expect(maxAbsDiff(await logits(d), ref)).toBe(0);
  });
});
