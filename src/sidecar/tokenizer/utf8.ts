// UTF-8 helpers shared by the decoders and the streaming detokenizer.
//
// NOTE: the two reference decoders do NOT replace invalid bytes the way Python's
// `bytes.decode('utf-8', 'replace')` or WHATWG `TextDecoder` do (both replace a *maximal subpart* with one
// U+FFFD: E4 B8 41 → "\uFFFDA"). What they actually do, read from their sources:
//  - sentencepiece (`ProcessBytePieces` + `string_util::DecodeUTF8`): walk the run of byte pieces one
//    character at a time; a byte that does not start a complete, well-formed character becomes one U+FFFD
//    and the walk resumes at the next byte. E4 B8 41 → "\uFFFD\uFFFDA"; E4 B8 AD E4 → "中\uFFFD".
//  - HF tokenizers (`decoders::ByteFallback`): a maximal run of byte tokens is decoded as a whole; if the
//    whole run is not valid UTF-8, EVERY byte of the run becomes U+FFFD. E4 B8 AD E4 → "\uFFFD" × 4.
// `decodeBytesSp` and `decodeBytesHf` implement exactly these; `utf8CharState` is the streaming primitive.

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8'); // only ever fed well-formed input

export const REPLACEMENT = '\uFFFD';

export function utf8Encode(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Decodes bytes that are known to be well-formed UTF-8. */
export function utf8DecodeValid(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/**
 * State of the character starting at `bytes[i]` (looking at most at `bytes[i..end)`):
 *  > 0  the length of a complete, well-formed character;
 *  0    a proper prefix of a well-formed character that the available bytes cannot finish (more may come);
 *  -1   `bytes[i]` cannot start a well-formed character given the bytes that follow it.
 * Well-formed = RFC 3629 (no overlongs, no surrogates, ≤ U+10FFFF), the same set sentencepiece's
 * DecodeUTF8 accepts.
 */
export function utf8CharState(bytes: ArrayLike<number>, i: number, end: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  let need: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) need = 2;
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    need = 3;
    if (b0 === 0xe0) lo = 0xa0;
    else if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    need = 4;
    if (b0 === 0xf0) lo = 0x90;
    else if (b0 === 0xf4) hi = 0x8f;
  } else return -1;
  for (let k = 1; k < need; k++) {
    if (i + k >= end) return 0;
    const b = bytes[i + k]!;
    if (k === 1 ? b < lo || b > hi : b < 0x80 || b > 0xbf) return -1;
  }
  return need;
}

/** True when `bytes[start..end)` is entirely well-formed UTF-8. */
export function isValidUtf8(bytes: ArrayLike<number>, start = 0, end = bytes.length): boolean {
  for (let i = start; i < end; ) {
    const n = utf8CharState(bytes, i, end);
    if (n <= 0) return false;
    i += n;
  }
  return true;
}

/**
 * sentencepiece's decoding of a run of byte pieces (see the file note). With `final` false, an incomplete
 * trailing character is left undecoded and `consumed` stops before it (streaming); with `final` true every
 * byte is consumed and an incomplete tail becomes one U+FFFD per byte.
 */
export function decodeBytesSp(
  bytes: Uint8Array,
  start: number,
  end: number,
  final: boolean,
): { text: string; consumed: number } {
  let out = '';
  let i = start;
  let validFrom = i;
  const flushValid = (upTo: number): void => {
    if (upTo > validFrom) out += decoder.decode(bytes.subarray(validFrom, upTo));
  };
  while (i < end) {
    const n = utf8CharState(bytes, i, end);
    if (n > 0) {
      i += n;
      continue;
    }
    if (n === 0 && !final) break;
    flushValid(i);
    out += REPLACEMENT;
    i += 1;
    validFrom = i;
  }
  flushValid(i);
  return { text: out, consumed: i - start };
}

/** HF tokenizers' ByteFallback decoding of one complete run of byte tokens (see the file note). */
export function decodeBytesHf(bytes: Uint8Array): string {
  return isValidUtf8(bytes) ? decoder.decode(bytes) : REPLACEMENT.repeat(bytes.length);
}
