// A request's sequences (prompts x n: each choice of each prompt is one engine sequence) against the
// engine's --max-num-seqs (ModelInfo.maxNumSeqs). One request asking for more than the server runs
// at once is refused up front with the reason, rather than queued: it would hold every slot for as
// long as it runs, and the fair share between requests (native/src/engine/fair_share.h) is computed
// over requests that can each be seated whole.
import type { ModelInfo } from '../protocol/engine-client.js';
import { badRequest } from './errors.js';

export function checkSequences(prompts: number, n: number, info: Pick<ModelInfo, 'maxNumSeqs'>): void {
  const seqs = prompts * n;
  if (seqs <= info.maxNumSeqs) return;
  const what = prompts > 1 ? `${prompts} prompts x n=${n} = ${seqs} sequences` : `n=${n} sequences`;
  throw badRequest(
    `This request needs ${what} running together, but this server runs at most ${info.maxNumSeqs} (--max-num-seqs). Send fewer ${prompts > 1 ? 'prompts per request or a smaller n' : 'choices (n)'}.`,
    prompts > 1 ? 'prompt' : 'n',
  );
}
