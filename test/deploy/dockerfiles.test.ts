// container/Dockerfile and Dockerfile.cuda: linted by dockerfile-utils (the validator behind VS Code's
// Dockerfile diagnostics: instruction syntax, flags, ports, JSON forms, casing, duplicates; hadolint is
// on neither npm nor Debian), with every warning treated as an error; then the contracts of the
// deployment docs: multi-stage, a non-root runtime, HEALTHCHECK on /ready, /models volume, the entrypoint.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';

const read = (f: string) => readFileSync(fileURLToPath(new URL(`../../container/${f}`, import.meta.url)), 'utf8');

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

  it('is multi-stage and builds the engine with npm ci in a build stage', () => {
    expect(ins.filter(([k]) => k === 'FROM').length).toBeGreaterThanOrEqual(2);
    expect(ins.some(([k, a]) => k === 'RUN' && /npm ci --omit=dev/.test(a))).toBe(true);
    expect(last.some(([k, a]) => k === 'COPY' && a.includes('--from=build') && a.includes('ernie_native.node'))).toBe(true);
  });

  it('runs as non-root with a /ready HEALTHCHECK, a /models volume and the signal-forwarding entrypoint', () => {
    const user = last.filter(([k]) => k === 'USER').at(-1)?.[1];
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(last.find(([k]) => k === 'HEALTHCHECK')?.[1]).toMatch(/\/ready/);
    expect(last.find(([k]) => k === 'VOLUME')?.[1]).toContain('/models');
    expect(last.find(([k]) => k === 'ENTRYPOINT')?.[1]).toBe('["/usr/local/bin/ernie-edge-entrypoint"]');
    expect(last.some(([k, a]) => k === 'COPY' && a.includes('container/entrypoint.sh /usr/local/bin/ernie-edge-entrypoint'))).toBe(true);
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
    const ins = instructions(read('Dockerfile.cuda'));
    expect(ins.some(([k, a]) => k === 'FROM' && /nvidia\/cuda:.*-devel/.test(a))).toBe(true);
    expect(ins.some(([k, a]) => k === 'RUN' && a.includes('bash native/cuda/build.sh'))).toBe(true);
    expect(ins.some(([k, a]) => k === 'COPY' && a.includes('libernie_cuda.so'))).toBe(true);
  });
});
