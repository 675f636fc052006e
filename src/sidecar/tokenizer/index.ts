// The sidecar's text layer: tokenizers (tokenizer.json / tokenizer.model), chat template, streaming
// detokenizer. Entry point: `loadTokenizerBundle(dir)`; everything else hangs off the bundle.
//
//   const bundle = await loadTokenizerBundle(modelDir);       // log bundle.source
//   const ids = bundle.encodeChat(messages, { addGenerationPrompt: true });
//   const detok = bundle.newDetokenizer({ stop: ['\n\n'], skipSpecialTokens: true });
//   per engine step: const { text, stopped, tokens } = detok.push(newIds);   at the end: detok.flush()
//   generation ends on any of bundle.eosIds.

export { loadTokenizerBundle, TokenizerBundle } from './bundle.js';
export type { TokenizeInput, TokenizeResponse, TokenizerLoadOptions } from './bundle.js';
export { ChatTemplate, FALLBACK_CHAT_TEMPLATE, TemplateError } from './chat-template.js';
export { IncrementalDetokenizer } from './detokenizer.js';
export type { DetokenizerOptions, PushResult, TokenInfo } from './detokenizer.js';
export { HfJsonTokenizer } from './hf-json.js';
export { SentencePieceTokenizer } from './sentencepiece.js';
export type { TemplateMessage, ChatOptions, DecodeOptions, EncodeOptions, StreamPiece, TextSegment, Tokenizer, TokenizerKind } from './types.js';
