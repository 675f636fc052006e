// src/cli/child-env.ts: what of the parent's environment reaches `serve`'s sidecar child. The real
// child's /proc/PID/environ: serve-hygiene.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { sidecarEnv } from '../../src/cli/child-env.js';

const parent = {
  PATH: '/usr/bin',
  HOME: '/home/u',
  ERNIE_EDGE_CACHE: '/c',
  ERNIE_EDGE_TRACE_FILE: '/t.jsonl',
  TOKENIZERS_PARALLELISM: 'false',
  CUDA_VISIBLE_DEVICES: '0',
  ERNIE_EDGE_API_KEY: 'sk-gateway',
  ERNIE_EDGE_ENGINE_SECRET: 'engine-s',
  HF_TOKEN: 'hf_x',
  AWS_SECRET_ACCESS_KEY: 'aws',
  OPENAI_API_KEY: 'sk-o',
  DB_PASSWORD: 'pw',
  GITHUB_TOKEN: 'gh',
};

describe('sidecarEnv', () => {
  it('passes everything but the secrets the sidecar does not need', () => {
    expect(sidecarEnv(parent)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
      ERNIE_EDGE_CACHE: '/c',
      ERNIE_EDGE_TRACE_FILE: '/t.jsonl',
      TOKENIZERS_PARALLELISM: 'false',
      CUDA_VISIBLE_DEVICES: '0',
    });
  });

  it('passes the engine secret only when the sidecar listens on TCP', () => {
    const env = sidecarEnv(parent, 'engine-s');
    expect(env.ERNIE_EDGE_ENGINE_SECRET).toBe('engine-s');
    expect(env.ERNIE_EDGE_API_KEY).toBeUndefined();
  });
});
