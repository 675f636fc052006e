// Prints where a .cpuprofile (node --cpu-prof, or bench/serve-path-fake.ts --profile) spends its time:
// self time per function (file:line), and the share of idle. Usage: node --import tsx bench/serve-path/profile-top.ts FILE [N]
import { readFileSync } from 'node:fs';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }
const file = process.argv[2]!;
const top = Number(process.argv[3] ?? 30);
const prof = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
prof.samples.forEach((id, i) => {
  const n = byId.get(id)!;
  const dt = prof.timeDeltas[i] ?? 0;
  total += dt;
  const { functionName, url, lineNumber } = n.callFrame;
  const key = `${functionName || '(anon)'} ${url.replace(/^.*\/(node_modules\/|src\/|test\/)/, '$1')}:${lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
});
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
for (const [k, v] of rows) console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
