// The sidecar main thread's cost of framing one /tokenize reply of a 4 MB prompt (REPLY_IDS, ~570k ids),
// before and after the ids were written as a view of their own memory (src/protocol/packed-ids.ts):
// packed into a fresh buffer (packIds) vs as parts (packedIdsParts). Each repetition frames a fresh
// Int32Array, as each reply does; measured as CPU time (user + sys of this one-thread process), which holds on a loaded
// host where wall time does not, alternating the two ways so both see the same host.
//
//   node --import tsx bench/abuse/reply-ids.ts [ids=570000] [reps=40]
import { encodeFrameParts } from '../../src/protocol/framing.js';
import { MsgType } from '../../src/protocol/messages.js';
import { packedIdsParts, packIds } from '../../src/protocol/packed-ids.js';

const n = Number(process.argv[2] ?? 570_000);
const reps = Number(process.argv[3] ?? 40);
const json = new TextEncoder().encode(JSON.stringify({ cid: 1, ok: true, result: { count: n, maxModelLen: 2048 } }));
const ways = {
  packed: (ids: Int32Array) => encodeFrameParts(MsgType.REPLY_IDS, packIds(json, ids)),
  parts: (ids: Int32Array) => encodeFrameParts(MsgType.REPLY_IDS, packedIdsParts(json, ids)),
};
const cpuMs: Record<keyof typeof ways, number[]> = { packed: [], parts: [] };
let sink = 0;
for (let r = 0; r < reps; r++) {
  for (const way of (r % 2 ? ['parts', 'packed'] : ['packed', 'parts']) as (keyof typeof ways)[]) {
    const ids = new Int32Array(n).fill(r); // fresh, as the tokenizer worker's transferred reply is
    const t0 = process.cpuUsage();
    sink += ways[way](ids).length;
    const t = process.cpuUsage(t0);
    cpuMs[way].push((t.user + t.system) / 1000);
  }
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
console.log(JSON.stringify({ ids: n, reps, cpuMsMedian: { packed: +median(cpuMs.packed).toFixed(2), parts: +median(cpuMs.parts).toFixed(3) }, cpuMsMax: { packed: +Math.max(...cpuMs.packed).toFixed(2), parts: +Math.max(...cpuMs.parts).toFixed(3) }, sink }));
