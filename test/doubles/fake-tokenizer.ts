// The fake engine's tokenizer: one token per Unicode code point (id = code point + 3) plus three
// specials. Reversible and deterministic, which is all gateway tests need; mixed Chinese/English text
// exercises multi-byte UTF-8 in token bytes and text offsets.

import type { ChatMessage } from '../../src/protocol/engine-client.js';

export const UNK_ID = 0;
export const BOS_ID = 1;
export const EOS_ID = 2;
const SPECIALS = ['<unk>', '<s>', '</s>'];
const OFFSET = SPECIALS.length;

export class FakeTokenizer {
  constructor(readonly vocabSize: number) {}

  encode(text: string, addBos: boolean): number[] {
    const ids = addBos ? [BOS_ID] : [];
    for (const ch of text) {
      const id = ch.codePointAt(0)! + OFFSET;
      ids.push(id < this.vocabSize ? id : UNK_ID);
    }
    return ids;
  }

  /** The fake chat template: `role: content\n` per message, then `assistant: ` as the generation prompt. */
  applyChatTemplate(messages: ChatMessage[], addGenerationPrompt: boolean): string {
    return messages.map((m) => `${m.role}: ${m.content}\n`).join('') + (addGenerationPrompt ? 'assistant: ' : '');
  }

  isSpecial(id: number): boolean {
    return id < OFFSET;
  }

  isValid(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize;
  }

  piece(id: number): string {
    return id < OFFSET ? SPECIALS[id]! : String.fromCodePoint(id - OFFSET);
  }

  decode(ids: number[], skipSpecial: boolean): string {
    return ids
      .filter((id) => !(skipSpecial && this.isSpecial(id)))
      .map((id) => this.piece(id))
      .join('');
  }
}
