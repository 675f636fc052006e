// `ernie-edge bench serve`'s flags: its own table (vLLM's `vllm bench serve` names), read by the same
// parser as serve's (../args.ts), and the options it yields. --help and README.md's table are
// generated from the table. Where a flag extends vLLM's meaning, its help says how.

import { parseFlags, UsageError, type ParsableFlag } from '../args.js';

export type Endpoint = '/v1/completions' | '/v1/chat/completions';
export type DatasetName = 'random' | 'sharegpt' | 'article';

/** Service-level objectives for goodput, in ms (vLLM's `--goodput ttft:200 tpot:10 e2el:5000`). */
export interface Slos {
  ttft?: number;
  tpot?: number;
  e2el?: number;
}

export interface BenchServeOptions {
  baseUrl: string;
  /** Absent: the first model /v1/models lists. */
  model?: string;
  endpoint: Endpoint;
  dataset: DatasetName;
  datasetPath?: string;
  /** Inclusive [min, max] token counts of the random dataset's prompts and outputs. */
  inputLen: [number, number];
  outputLen: [number, number];
  /** Random token ids are drawn from [16, vocabSize). */
  vocabSize: number;
  sharegptOutputLen?: number;
  articleOutputLen: number;
  /** One entry per sweep level; null: no limit. */
  maxConcurrency: (number | null)[];
  /** One entry per sweep level (a single --num-prompts applies to every level). */
  numPrompts: number[];
  /** Requests/s of the Poisson arrivals; Infinity: all at once. */
  requestRate: number;
  burstiness: number;
  seed: number;
  stream: boolean;
  ignoreEos: boolean;
  temperature: number;
  logprobs?: number;
  returnTokenIds: boolean;
  goodput: Slos;
  numWarmups: number;
  /** Absent: chosen per level from its concurrency (./workers.ts autoWorkers). */
  numWorkers?: number;
  saveResult: boolean;
  saveDetailed: boolean;
  resultDir: string;
  resultFilename?: string;
  apiKey?: string;
  disableProgress: boolean;
  timeoutMs: number;
}

export const BENCH_SERVE_FLAGS: readonly ParsableFlag[] = [
  { name: 'base-url', kind: 'string', arg: 'URL', help: 'the server, any OpenAI-compatible one (default http://127.0.0.1:8000)' },
  { name: 'model', kind: 'string', arg: 'NAME', help: 'the model name sent (default: the first model GET /v1/models lists)' },
  { name: 'endpoint', kind: 'string', arg: 'PATH', help: '/v1/completions (default) or /v1/chat/completions' },
  { name: 'dataset-name', kind: 'string', arg: 'random|sharegpt|article', help: "random (default): token-id prompts for /v1/completions (as vLLM sends), word prompts of about that many tokens for chat; sharegpt: the first human turn of each --dataset-path conversation; article: the seed article's 5 Chinese prompts, cycled" },
  { name: 'dataset-path', kind: 'string', arg: 'FILE', help: 'the ShareGPT JSON file (a list of {conversations: [{from, value}]})' },
  { name: 'random-input-len', kind: 'string', arg: 'N|MIN-MAX', help: 'prompt tokens of the random dataset (default 1024); MIN-MAX (our extension) draws uniformly from that range instead of --random-range-ratio' },
  { name: 'random-output-len', kind: 'string', arg: 'N|MIN-MAX', help: 'new tokens per random request (default 128); MIN-MAX as for --random-input-len' },
  { name: 'random-range-ratio', kind: 'number', arg: 'R', help: 'lengths drawn uniformly from [N·(1−R), N·(1+R)], 0 ≤ R < 1 (default 0: exactly N), as vLLM' },
  { name: 'random-vocab-size', kind: 'int', arg: 'N', help: 'random token ids are drawn from [16, N), skipping the low ids most vocabularies keep for special tokens (default 32000, within every common vocabulary)' },
  { name: 'sharegpt-output-len', kind: 'int', arg: 'N', help: "new tokens per ShareGPT request (default: the reference reply's length, estimated at one token per 4 Latin characters or per CJK character, since no tokenizer is loaded)" },
  { name: 'article-output-len', kind: 'int', arg: 'N', help: 'new tokens per article request (default 256, as the article)' },
  { name: 'num-prompts', kind: 'string', arg: 'N[,N…]', help: 'requests per run (default 1000); a comma list gives each --max-concurrency level its own count' },
  { name: 'max-concurrency', kind: 'string', arg: 'C[,C…]', help: 'most requests in flight (default: no limit); a comma list sweeps, one run per level, each on fresh prompts, in one plot' },
  { name: 'request-rate', kind: 'string', arg: 'RPS|inf', help: 'requests per second, arrivals a Poisson process drawn from --seed (default inf: all at once)' },
  { name: 'burstiness', kind: 'number', arg: 'F', help: 'shape of the gamma-distributed arrival gaps: 1 (default) is Poisson, below 1 burstier, above 1 more regular, as vLLM' },
  { name: 'seed', kind: 'int', arg: 'N', help: 'seed of the prompts, lengths and arrival times (default 0)' },
  { name: 'stream', kind: 'bool', negatable: true, help: 'stream responses (SSE; default on); --no-stream: whole responses, then TTFT equals the end-to-end latency and there is no ITL. (vLLM always streams; its --no-stream is about dataset loading)' },
  { name: 'ignore-eos', kind: 'bool', help: 'send ignore_eos: true so every request generates its full length (vLLM extension; servers that lack it refuse it or ignore it)' },
  { name: 'temperature', kind: 'number', arg: 'T', help: 'sampling temperature (default 0: greedy)' },
  { name: 'logprobs', kind: 'int', arg: 'K', help: 'ask for logprobs of K alternatives per token; then every token is its own chunk even where it decodes to no text' },
  { name: 'return-token-ids', kind: 'bool', help: 'send return_token_ids: true (vLLM extension): a chunk then counts as a token arrival by its token ids, also where its text is held back or empty; unlike --logprobs it costs the server no work per token' },
  { name: 'goodput', kind: 'string', arg: 'KEY:MS …', repeatable: true, help: 'SLOs for goodput (requests/s meeting all of them): ttft, tpot, e2el in ms, e.g. --goodput ttft:200 tpot:10, as vLLM' },
  { name: 'num-warmups', kind: 'int', arg: 'N', help: 'requests sent and discarded before each run (default 1, as vLLM checks the server with one test request)' },
  { name: 'num-workers', kind: 'int', arg: 'N', help: "worker threads the requests are spread over (default: 1 up to 64 in flight, one more per 64, at most half the cores, so each thread keeps headroom); 1 = the main thread alone" },
  { name: 'save-result', kind: 'bool', help: 'write the results as JSON and the plot as SVG into --result-dir' },
  { name: 'save-detailed', kind: 'bool', help: 'with --save-result: every request (start, TTFT, ITLs, latency, tokens, status) in the JSON' },
  { name: 'result-dir', kind: 'string', arg: 'DIR', help: 'where --save-result writes (default: the current directory)' },
  { name: 'result-filename', kind: 'string', arg: 'NAME', help: 'the JSON file name (default bench-serve-MODEL-DATE.json); the SVG takes the same name with .svg' },
  { name: 'api-key', kind: 'string', arg: 'KEY', env: 'OPENAI_API_KEY', help: 'sent as Authorization: Bearer KEY (env OPENAI_API_KEY, as vLLM)' },
  { name: 'disable-tqdm', kind: 'bool', help: 'no progress bar (it is drawn only on a terminal anyway)' },
  { name: 'timeout', kind: 'number', arg: 'SECONDS', help: 'a request whose connection stays silent this long is cut and counted as a timeout error (default 600)' },
  { name: 'help', kind: 'bool', help: 'this text' },
];

export const BENCH_SERVE_USAGE = [
  'Usage: ernie-edge bench serve [--base-url http://127.0.0.1:8000] [--endpoint /v1/completions|/v1/chat/completions]',
  '                              [--dataset-name random|sharegpt|article] [--num-prompts N] [--max-concurrency C,C…]',
  '                              [--request-rate RPS|inf] [--goodput ttft:MS tpot:MS] [--save-result] [flags]',
  '  Load-tests an OpenAI-compatible server and reports throughput, TTFT, TPOT, ITL, end-to-end latency,',
  '  goodput and errors by status per concurrency level; --save-result writes JSON and an SVG plot.',
];

export const BENCH_SERVE_HELP = [
  ...BENCH_SERVE_USAGE,
  ...BENCH_SERVE_FLAGS.map((f) => `  ${`--${f.negatable ? `[no-]${f.name}` : f.name}${f.arg ? ` ${f.arg}` : ''}`.padEnd(32)} ${f.help}`),
].join('\n');

const GOODPUT_KEYS = ['ttft', 'tpot', 'e2el'] as const;

/** "N" or "MIN-MAX" → [lo, hi] given the range ratio (vLLM: [N·(1−R), N·(1+R)], floor and ceil). */
function lengthRange(name: string, v: string, ratio: number): [number, number] {
  const m = /^(\d+)(?:-(\d+))?$/.exec(v.trim());
  if (!m) throw new UsageError(`--${name} expects N or MIN-MAX, got '${v}'`);
  if (m[2] !== undefined) {
    const [lo, hi] = [Number(m[1]), Number(m[2])];
    if (lo < 1 || hi < lo) throw new UsageError(`--${name} ${v}: need 1 ≤ MIN ≤ MAX`);
    return [lo, hi];
  }
  const n = Number(m[1]);
  if (n < 1) throw new UsageError(`--${name} must be ≥ 1`);
  return [Math.max(1, Math.floor(n * (1 - ratio))), Math.ceil(n * (1 + ratio))];
}

function intList(name: string, v: string, min: number): number[] {
  const parts = v.split(',').map((s) => s.trim());
  return parts.map((p) => {
    if (!/^\d+$/.test(p) || Number(p) < min) throw new UsageError(`--${name} expects integers ≥ ${min} separated by commas, got '${v}'`);
    return Number(p);
  });
}

export function parseGoodput(items: readonly string[]): Slos {
  const slos: Slos = {};
  for (const item of items.flatMap((s) => s.split(/[\s,]+/)).filter(Boolean)) {
    const m = /^([a-z][a-z0-9]*):(\d+(?:\.\d+)?)$/.exec(item);
    const key = m?.[1] as (typeof GOODPUT_KEYS)[number] | undefined;
    if (!m || !key || !GOODPUT_KEYS.includes(key)) throw new UsageError(`--goodput expects KEY:MS with KEY one of ${GOODPUT_KEYS.join(', ')}, got '${item}'`);
    slos[key] = Number(m[2]);
  }
  return slos;
}

/** argv after `bench serve` → options, or 'help'. Bad flags and values are UsageErrors. */
export function parseBenchServeArgs(argv: readonly string[], env: Record<string, string | undefined> = {}): BenchServeOptions | 'help' {
  // vLLM's `--goodput ttft:200 tpot:10` gives several values to one flag: the bare KEY:MS words that
  // follow a --goodput join it.
  const flags = parseFlags(argv, BENCH_SERVE_FLAGS, env, (arg, given) => {
    if (!/^[a-z][a-z0-9]*:\d/.test(arg) || given.goodput === undefined) return false;
    (given.goodput as string[]).push(arg);
    return true;
  });
  if (flags.help === true) return 'help';
  const str = (n: string) => flags[n] as string | undefined;
  const int = (n: string, dflt: number, min: number) => {
    const v = (flags[n] as number | undefined) ?? dflt;
    if (v < min) throw new UsageError(`--${n} must be ≥ ${min}, got ${v}`);
    return v;
  };

  const given = str('base-url') ?? 'http://127.0.0.1:8000';
  const baseUrl = given.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!/^https?:\/\/[^/]/.test(baseUrl)) throw new UsageError(`--base-url must be http(s)://host[:port], got '${given}'`);
  const endpoint = (str('endpoint') ?? '/v1/completions') as Endpoint;
  if (endpoint !== '/v1/completions' && endpoint !== '/v1/chat/completions') throw new UsageError(`--endpoint must be /v1/completions or /v1/chat/completions, got '${endpoint}'`);
  const dataset = (str('dataset-name') ?? 'random') as DatasetName;
  if (!['random', 'sharegpt', 'article'].includes(dataset)) throw new UsageError(`--dataset-name must be random, sharegpt or article, got '${dataset}'`);
  const datasetPath = str('dataset-path');
  if (dataset === 'sharegpt' && !datasetPath) throw new UsageError('--dataset-name sharegpt needs --dataset-path FILE (a ShareGPT JSON file)');

  const ratio = (flags['random-range-ratio'] as number | undefined) ?? 0;
  if (ratio < 0 || ratio >= 1) throw new UsageError(`--random-range-ratio must be in [0, 1), got ${ratio}`);
  const inputLen = lengthRange('random-input-len', str('random-input-len') ?? '1024', ratio);
  const outputLen = lengthRange('random-output-len', str('random-output-len') ?? '128', ratio);

  const maxConcurrency = str('max-concurrency') === undefined ? [null] : intList('max-concurrency', str('max-concurrency')!, 1);
  const promptsGiven = intList('num-prompts', str('num-prompts') ?? '1000', 1);
  if (promptsGiven.length !== 1 && promptsGiven.length !== maxConcurrency.length) {
    throw new UsageError(`--num-prompts has ${promptsGiven.length} counts but --max-concurrency ${maxConcurrency.length} levels: give one count, or one per level`);
  }
  const numPrompts = maxConcurrency.map((_, i) => promptsGiven[promptsGiven.length === 1 ? 0 : i]!);

  const rateText = (str('request-rate') ?? 'inf').trim().toLowerCase();
  const requestRate = rateText === 'inf' ? Infinity : Number(rateText);
  if (!(requestRate > 0)) throw new UsageError(`--request-rate must be a positive number or inf, got '${rateText}'`);
  const burstiness = (flags.burstiness as number | undefined) ?? 1;
  if (!(burstiness > 0)) throw new UsageError(`--burstiness must be > 0, got ${burstiness}`);

  const timeout = (flags.timeout as number | undefined) ?? 600;
  if (!(timeout > 0)) throw new UsageError(`--timeout must be > 0 seconds, got ${timeout}`);
  const temperature = (flags.temperature as number | undefined) ?? 0;
  if (temperature < 0) throw new UsageError(`--temperature must be ≥ 0, got ${temperature}`);
  const logprobs = flags.logprobs as number | undefined;
  if (logprobs !== undefined && logprobs < 0) throw new UsageError(`--logprobs must be ≥ 0, got ${logprobs}`);

  return {
    baseUrl,
    model: str('model'),
    endpoint,
    dataset,
    datasetPath,
    inputLen,
    outputLen,
    vocabSize: int('random-vocab-size', 32000, 17),
    sharegptOutputLen: flags['sharegpt-output-len'] === undefined ? undefined : int('sharegpt-output-len', 0, 1),
    articleOutputLen: int('article-output-len', 256, 1),
    maxConcurrency,
    numPrompts,
    requestRate,
    burstiness,
    seed: (flags.seed as number | undefined) ?? 0,
    stream: flags.stream !== false,
    ignoreEos: flags['ignore-eos'] === true,
    temperature,
    logprobs,
    returnTokenIds: flags['return-token-ids'] === true,
    goodput: parseGoodput((flags.goodput as string[] | undefined) ?? []),
    numWarmups: int('num-warmups', 1, 0),
    numWorkers: flags['num-workers'] === undefined ? undefined : int('num-workers', 1, 1),
    saveResult: flags['save-result'] === true,
    saveDetailed: flags['save-detailed'] === true,
    resultDir: str('result-dir') ?? '.',
    resultFilename: str('result-filename'),
    apiKey: str('api-key'),
    disableProgress: flags['disable-tqdm'] === true,
    timeoutMs: timeout * 1000,
  };
}
