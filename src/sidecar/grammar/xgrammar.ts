// Loads @mlc-ai/web-xgrammar (xgrammar compiled to WebAssembly, the structured-output backend vLLM
// uses by default). Its bundle is a UMD script inside a "type": "module" package: imported, it runs as
// an ES module where its CommonJS branch is dead and it exports nothing. So the script is evaluated as
// CommonJS here, with a `require` from createRequire (it needs node:url and node:module). Its one
// dynamic import, `await import('module')`, becomes that require: code built by new Function has no
// module context to import from under every loader (vitest's among them). Each call evaluates it afresh: a separate WebAssembly instance with its own memory, so
// a caller can throw away an instance that an abort left in a bad state (./compile.ts).
// One function is added to the bundle's exports, writeNextTokenBitmask: a matcher's next mask written
// straight from the WebAssembly memory into the caller's array. GrammarMatcher.getNextTokenBitmask
// copies it into a fresh Int32Array (13 KB over a 103k vocabulary) behind an await, once per row per
// step on the grammar workers' hot path (bench/README.md, structured output, has the measurement).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Xgrammar from '@mlc-ai/web-xgrammar';

export type XgrammarModule = typeof Xgrammar & {
  /** Writes matcher's next token bitmask's first `words` words into out at `at` (its matcher exists, so the module is initialised). */
  writeNextTokenBitmask(matcher: Xgrammar.GrammarMatcher, out: Int32Array, at: number, words: number): void;
};

const require = createRequire(import.meta.url);
const FILE = require.resolve('@mlc-ai/web-xgrammar');
let source: string | undefined;
const DYNAMIC_IMPORT = "await import('module')";
const EXPORTS_END = 'exports.default = index;';
// Inside the bundle's scope: `binding` is its initialised WebAssembly module once a matcher exists;
// GetNextTokenBitmask returns a std::vector<int32_t> the caller deletes (as getNextTokenBitmask does).
const WRITE_MASK = `${EXPORTS_END}
  exports.writeNextTokenBitmask = function (matcher, out, at, words) {
    const v = matcher.handle.GetNextTokenBitmask(matcher.vocab_size);
    try { out.set(binding.vecIntToView(v).subarray(0, words), at); } finally { v.delete(); }
  };`;

/** A fresh xgrammar instance (the WebAssembly module instantiates on its first use). */
export function loadXgrammar(): XgrammarModule {
  if (source === undefined) {
    const text = readFileSync(FILE, 'utf8');
    if (!text.includes(DYNAMIC_IMPORT) || text.split(EXPORTS_END).length !== 2)
      throw new Error(`${FILE}: not the @mlc-ai/web-xgrammar bundle this loader knows (0.1.27)`);
    source = text.replace(DYNAMIC_IMPORT, "require('module')").replace(EXPORTS_END, WRITE_MASK);
  }
  const module = { exports: {} as XgrammarModule };
  const run = new Function('exports', 'module', 'require', '__filename', '__dirname', source) as (...args: unknown[]) => void;
  run.call(module.exports, module.exports, module, createRequire(FILE), FILE, path.dirname(FILE));
  return module.exports;
}

/**
 * xgrammar reports a bad grammar by printing "[FATAL] file.cc:line: message" through console.error
 * and aborting the WebAssembly call (the thrown error says only "Aborted()"). Installed before an
 * instance starts (it binds console.error then), this keeps the last message for the caller.
 */
export class FatalMessages {
  private last = '';
  install(): void {
    const original = console.error.bind(console);
    console.error = (...args: unknown[]) => {
      const line = args.map(String).join(' ');
      if (line.startsWith('[FATAL]')) this.last = line.replace(/^\[FATAL\] \S+:\d+: /, '').trim();
      else if (!line.startsWith('Aborted(')) original(...args);
    };
  }
  /** The message of the last abort since the previous take(), or `fallback`. */
  take(fallback: string): string {
    const m = this.last;
    this.last = '';
    return m || fallback;
  }
}
