// container/Dockerfile and Dockerfile.cuda: linted by dockerfile-utils (the validator behind VS Code's
// Dockerfile diagnostics: instruction syntax, flags, ports, JSON forms, casing, duplicates; hadolint is
// on neither npm nor Debian), with every warning treated as an error; then the contracts of the
// deployment docs: multi-stage with digest-pinned bases, the native build cached apart from the
// TypeScript, compiled JS at run time, a non-root runtime, a role-aware HEALTHCHECK, no anonymous
// volume, the placeholder's tokenizer inside, the entrypoint. The images are built and run by
// test/deploy/container.e2e.test.ts where podman or docker works.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';

const read = (f: string) => readFileSync(fileURLToPath(new URL(`../../container/${f}`, import.meta.url)), 'utf8');

interface Stage {
  from: string;
  name: string | null;
  ins: [string, string][];
}
/** The stages, each with its FROM image, its `AS` name and its instructions after FROM. */
function stagesOf(ins: [string, string][]): Stage[] {
  const out: Stage[] = [];
  for (const [k, a] of ins) {
    if (k === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(a)!;
      out.push({ from: m[1]!, name: m[2] ?? null, ins: [] });
    } else out.at(-1)?.ins.push([k, a]);
  }
  return out;
}

/** [KEYWORD, arguments] per instruction: comments dropped, `\` continuations joined. */
function instructions(text: string): [string, string][] {
  const joined = text.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n').replace(/\\\n/g, ' ');
  return joined.split('\n').filter((l) => l.trim()).map((l) => {
    const m = /^\s*(\S+)\s*(.*)$/.exec(l)!;
    return [m[1]!.toUpperCase(), m[2]!.trim()];
  });
}

describe.each(['Dockerfile', 'Dockerfile.cuda'])('container/%s', (file) => {
  const text = read(file);
  const ins = instructions(text);
  const last = ins.slice(ins.map(([k]) => k).lastIndexOf('FROM')); // the runtime stage

  it('has no linter diagnostics (errors or warnings)', () => {
    const problems = validate(text).map((d) => `${file}:${d.range.start.line + 1}: ${d.message}`);
    expect(problems).toEqual([]);
  });

  const stages = stagesOf(ins);
  const runtime = stages.at(-1)!;

  it('is multi-stage and builds the engine with npm ci in a build stage', () => {
    expect(ins.filter(([k]) => k === 'FROM').length).toBeGreaterThanOrEqual(2);
    expect(ins.some(([k, a]) => k === 'RUN' && /npm ci --omit=dev/.test(a))).toBe(true);
    const addon = last.find(([k, a]) => k === 'COPY' && a.includes('ernie_native.node'))?.[1];
    expect(addon).toMatch(/--from=(\S+)/); // built in an earlier stage, not in the runtime one
    expect(stages.slice(0, -1).map((st) => st.name)).toContain(/--from=(\S+)/.exec(addon!)![1]);
  });

  it('pins every registry base by digest; the runtime is Node 24 without a compiler or tsx', () => {
    const args = Object.fromEntries(ins.filter(([k]) => k === 'ARG').map(([, a]) => a.split('=') as [string, string]));
    const bases = stages.map((st) => st.from.replace(/^\$\{(\w+)\}$/, (_, n: string) => args[n] ?? `unset ${n}`));
    for (const b of bases.filter((b) => !stages.some((st) => st.name === b))) expect(b).toMatch(/^docker\.io\/[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}$/);
    expect(Object.values(args).join(' ')).toMatch(/node:24-bookworm-slim@/);
    expect(runtime.ins.some(([k, a]) => k === 'RUN' && /npm|tsx|g\+\+/.test(a))).toBe(false);
  });

  it('caches the native build apart from the TypeScript: the addon stage copies only native/ (and the lockfile deps)', () => {
    const addonStage = stages.find((st) => st.ins.some(([k, a]) => k === 'RUN' && a.includes('npm run build:native')))!;
    const copied = addonStage.ins.filter(([k]) => k === 'COPY').map(([, a]) => a.replace(/--\S+\s+/g, '').split(/\s+/).slice(0, -1)).flat();
    expect(copied.filter((src) => !src.startsWith('/app/node_modules')).sort()).toEqual(['native/binding.gyp', 'native/cuda/include', 'native/src', 'package.json']);
    expect(addonStage.ins.find(([k, a]) => k === 'ENV' && a.includes('npm_config_nodedir')) ?? stages.find((st) => st.name === addonStage.from)?.ins.find(([k, a]) => k === 'ENV' && a.includes('npm_config_nodedir'))).toBeDefined();
    // TypeScript is compiled at build time (dist/), so the runtime never transpiles.
    expect(stages.some((st) => st.ins.some(([k, a]) => k === 'RUN' && a.includes('tsc -p tsconfig.build.json')))).toBe(true);
    expect(runtime.ins.some(([k, a]) => k === 'COPY' && /\/app\/dist \.\/dist$/.test(a))).toBe(true);
    expect(runtime.ins.some(([k, a]) => k === 'COPY' && /(^|\s)(src|adapters)(\s|$)/.test(a))).toBe(false);
  });

  it('runs as non-root with a role-aware HEALTHCHECK, no anonymous volume, the placeholder tokenizer and the signal-forwarding entrypoint', () => {
    const user = last.filter(([k]) => k === 'USER').at(-1)?.[1];
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(user).toMatch(/^\d+:\d+$/); // numeric: Kubernetes' runAsNonRoot can check it
    expect(last.find(([k]) => k === 'HEALTHCHECK')?.[1]).toContain('/app/container/healthcheck.mjs');
    expect(read('healthcheck.mjs')).toMatch(/\/ready/);
    expect(read('healthcheck.mjs')).toMatch(/ERNIE_EDGE_ROLE === 'sidecar'/);
    expect(last.find(([k]) => k === 'VOLUME')).toBeUndefined(); // a VOLUME leaves an anonymous volume per container
    for (const f of ['tokenizer.model', 'hf/tokenizer.json', 'hf/tokenizer_config.json']) {
      const name = f.split('/').pop()!;
      expect(runtime.ins.some(([k, a]) => k === 'COPY' && a.includes(`test/fixtures/golden/tokenizer/${f.includes('/') ? 'hf/' : ''}${name}`))).toBe(true);
    }
    expect(last.find(([k]) => k === 'ENTRYPOINT')?.[1]).toBe('["/usr/local/bin/ernie-edge-entrypoint"]');
    expect(last.some(([k, a]) => k === 'COPY' && a.includes('container/entrypoint.sh /usr/local/bin/ernie-edge-entrypoint'))).toBe(true);
  });
});

describe('.dockerignore', () => {
  it('sends the placeholder tokenizer and nothing else of test/', () => {
    const rules = readFileSync(fileURLToPath(new URL('../../.dockerignore', import.meta.url)), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
    expect(rules).toEqual(expect.arrayContaining(['node_modules', 'dist', 'test/*', '!test/fixtures/golden/tokenizer']));
  });
});

describe('the linter', () => {
  it('does catch broken Dockerfiles', () => {
    const bad = 'FROM node:20 AS a\nEXPOSE notaport\nHEALTHCHECK --intervl=5s CMD true\nUSER\n';
    expect(validate(bad).map((d) => d.message)).toEqual(expect.arrayContaining([expect.stringMatching(/containerPort/), expect.stringMatching(/Unknown flag: intervl/), expect.stringMatching(/no arguments/)]));
  });
});

describe('the CUDA image', () => {
  it('builds native/cuda with nvcc from a CUDA devel image and ships the library', () => {
    const text = read('Dockerfile.cuda');
    const ins = instructions(text);
    expect(ins.some(([k, a]) => (k === 'FROM' || k === 'ARG') && /nvidia\/cuda:.*-devel/.test(a))).toBe(true);
    expect(ins.some(([k, a]) => k === 'RUN' && a.includes('bash native/cuda/build.sh'))).toBe(true);
    expect(ins.some(([k, a]) => k === 'COPY' && a.includes('libernie_cuda.so'))).toBe(true);
  });

  it('layers addon, CUDA library and TypeScript apart; Node headers for node-gyp; a -base runtime with cuBLAS alone', () => {
    const ins = instructions(read('Dockerfile.cuda'));
    const stages = stagesOf(ins);
    const building = (what: string) => stages.filter((st) => st.ins.some(([k, a]) => k === 'RUN' && a.includes(what)));
    for (const what of ['npm ci', 'npm run build:native', 'native/cuda/build.sh', 'tsc -p']) expect(building(what)).toHaveLength(1);
    expect(new Set(['npm ci', 'npm run build:native', 'native/cuda/build.sh', 'tsc -p'].map((w) => building(w)[0]!.name)).size).toBe(4);
    expect(ins.some(([k, a]) => k === 'COPY' && a.includes('/usr/local/include/node'))).toBe(true);
    expect(ins.some(([k, a]) => k === 'ENV' && a.includes('npm_config_nodedir=/usr/local'))).toBe(true);
    const args = Object.fromEntries(ins.filter(([k]) => k === 'ARG').map(([, a]) => a.split('=') as [string, string]));
    expect(args.CUDA_BASE_IMAGE).toMatch(/nvidia\/cuda:[\d.]+-base-/);
    expect(Object.values(args).join(' ')).not.toMatch(/-runtime-/);
    expect(stages.at(-1)!.ins.some(([k, a]) => k === 'RUN' && /apt-get install .*libcublas-/.test(a))).toBe(true);
    // Several GPU generations by default, overridable; sm_80 is the floor (bf16 mma.sync).
    const archs = args.CUDA_ARCHS!.replace(/"/g, '').split(';').map((a) => Number.parseInt(a, 10));
    expect(archs.length).toBeGreaterThan(1);
    expect(Math.min(...archs)).toBe(80);
    expect(archs).toContain(90);
  });
});
