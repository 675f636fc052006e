// Turns trusted/untrusted text segments into the encoder's work list: added-token ids, and runs of plain
// text between them. Plain text is joined ACROSS segment borders, so a chat render is encoded exactly as
// the reference encodes the whole rendered string (merges may span "User: " + content), while special
// markers are recognised only inside trusted (template) segments.

import type { SplitPiece } from './added-tokens.js';
import type { TextSegment } from './types.js';

export interface PlainRun {
  text: string;
  /** The run starts at offset 0 of the whole input (sentencepiece's dummy prefix / HF prepend "first"). */
  atStart: boolean;
}

export type WorkItem = number | PlainRun;

export function splitSegments(
  segments: readonly TextSegment[],
  split: (text: string, parseSpecial: boolean) => SplitPiece[],
): WorkItem[] {
  const out: WorkItem[] = [];
  let run: PlainRun | null = null;
  let offset = 0;
  for (const seg of segments) {
    for (const p of split(seg.text, seg.parseSpecial)) {
      if (p.id >= 0) {
        if (run) out.push(run);
        run = null;
        out.push(p.id);
      } else if (run) run.text += p.text;
      else run = { text: p.text, atStart: offset === 0 };
      offset += p.text.length;
    }
  }
  if (run) out.push(run);
  return out;
}
