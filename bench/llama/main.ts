// The llama.cpp side of `npm run bench:engine`, run in its own process (so its peak RSS is its own and
// its thread pool never shares a process with the engine's): converts the formula checkpoint to GGUF
// once, then measures what the engine benchmark measures and writes one JSON file.
//   node --import tsx bench/llama/main.ts --out FILE [--threads 2] [--levels 8,32,64] [--quick]
//        [--batch-size N] [--flash-attention on|off]
// Same figures as the engine's: decode after a 16-token prompt (128 tokens), prefill of 512 tokens, the
// article's 5 prompts at once (256 new tokens), and one wave per level (`--quick`: new tokens capped at 64).
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ensureDefaultModelDir } from '../../src/sidecar/model/default-bundle.js';
import { articleWorkload, sideBySideWorkload } from '../engine/workload.js';
import { ensureGguf } from './convert.js';
import { greedyCheck, llamaRun, llamaSingleStream, type LlamaRunResult } from './measure.js';
import { loadLlama, nodeLlamaVersion, type LlamaContextOptions } from './node-llama.js';

export interface LlamaBenchOutput {
  nodeLlamaCpp: string;
  systemInfo: string;
  threads: number;
  gguf: string;
  contextOptions: Omit<LlamaContextOptions, 'contextSize' | 'sequences'>;
  greedy: Awaited<ReturnType<typeof greedyCheck>>;
  singleStream: Awaited<ReturnType<typeof llamaSingleStream>>;
  article: LlamaRunResult;
  levels: { concurrency: number; result: LlamaRunResult }[];
  peakRssBytes: number;
}

async function main(): Promise<void> {
  const { values: a } = parseArgs({
    options: {
      out: { type: 'string' },
      threads: { type: 'string', default: '2' },
      levels: { type: 'string', default: '8,32,64' },
      quick: { type: 'boolean', default: false },
      'batch-size': { type: 'string', default: '512' },
      // NOTE: on by default: llama.cpp's own default ("auto") enables it on the CPU backend, and it is what
      // makes its multi-sequence decode cheaper: one llama_decode of 64 sequences x 1 token took 475 ms with
      // it and 900-1200 ms without (1 sequence x 64 tokens: 200 vs 250 ms). A larger batch (2048 tokens)
      // did not help (a wave of 8 requests: 34.5 vs 34.8 tok/s).
      'flash-attention': { type: 'string', default: 'on' },
    },
  });
  if (!a.out) throw new Error('--out FILE is required');
  const threads = Number(a.threads);
  const quick = a.quick === true;
  const log = (s: string) => process.stderr.write(`[llama.cpp] ${s}\n`);
  // The formula checkpoint with the project's tokenizer beside it (the GGUF carries the vocabulary).
  const { dir } = await ensureDefaultModelDir({ weights: true });
  const gguf = await ensureGguf(dir);
  const llama = await loadLlama(threads);
  const model = await llama.loadModel({ modelPath: gguf });
  const ctxOptions = { threads, batchSize: Number(a['batch-size']), flashAttention: a['flash-attention'] === 'on' };
  log(`${gguf}, ${threads} threads, batch ${ctxOptions.batchSize}, flash attention ${ctxOptions.flashAttention}`);

  const greedy = await greedyCheck(model, threads);
  log(`greedy vs reference: ${greedy.freeRunMatch}/${greedy.steps} free-running, ${greedy.teacherForcedMatch}/${greedy.steps} teacher-forced`);
  const singleStream = await llamaSingleStream(model, threads, { decodeTokens: 128, prefillTokens: 512, runs: 3 });
  log(`single stream: decode ${singleStream.decodeTokS.toFixed(1)} tok/s, prefill ${singleStream.prefillTokS.toFixed(1)} tok/s`);
  const article = await llamaRun(model, await articleWorkload(256), 5, 'llama.cpp, all 5 at once', ctxOptions);
  log(`article: ${article.outputTokS.toFixed(1)} tok/s`);
  const levels: LlamaBenchOutput['levels'] = [];
  for (const c of a.levels.split(',').map(Number)) {
    const result = await llamaRun(model, sideBySideWorkload(c, quick), c, `llama.cpp c=${c} (${c} req)`, ctxOptions);
    log(`c=${c}: ${result.outputTokS.toFixed(1)} tok/s, ${result.tokensPerDecode?.toFixed(1)} tokens per llama_decode`);
    levels.push({ concurrency: c, result });
  }
  const systemInfo = llama.systemInfo.trim();
  await model.dispose();
  await llama.dispose();
  const out: LlamaBenchOutput = {
    nodeLlamaCpp: nodeLlamaVersion(), systemInfo, threads, gguf, contextOptions: ctxOptions,
    greedy, singleStream, article, levels, peakRssBytes: process.resourceUsage().maxRSS * 1024,
  };
  await writeFile(a.out, JSON.stringify(out, null, 2) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
