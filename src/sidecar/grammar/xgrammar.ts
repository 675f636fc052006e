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
// The module also keeps, as embind registers them, each class method's raw invoker (the WebAssembly
// function embind's generated JS calls, with its context: the bound C++ function) and each class's raw
// destructor: ./mask-writer.ts calls GrammarMatcher's GetNextTokenBitmask, AcceptToken and IsTerminated
// through them, without embind's JS wrappers around each call (argument checks, a class handle made and
// deleted for the returned vector, a second call to view it).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Xgrammar from '@mlc-ai/web-xgrammar';

/** A class method as embind registered it: invoker(context, this pointer, ...wire arguments). */
export interface RawMethod {
  className: string;
  invoker: (...args: number[]) => number;
  context: number;
}
/** What embind registered, by class: methods by name, the raw destructor (of a pointer to an instance). */
export interface RawBindings {
  methods: Map<string, RawMethod>; // `${class}.${method}`
  destructors: Map<string, (ptr: number) => void>;
}

export type XgrammarModule = typeof Xgrammar & {
  /** Writes matcher's next token bitmask's first `words` words into out at `at` (its matcher exists, so the module is initialised). */
  writeNextTokenBitmask(matcher: Xgrammar.GrammarMatcher, out: Int32Array, at: number, words: number): void;
  /** The initialised WebAssembly module's raw bindings and heap (once a matcher exists, else null). */
  rawBindings(): { raw: RawBindings; heap32: () => Int32Array } | null;
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
  };
  exports.rawBindings = function () {
    if (binding == null) return null;
    const raw = binding.__eeRaw;
    const types = new Map(raw.classes.map((c) => [c.rawType, c.name]));
    const methods = new Map();
    for (const m of raw.methods) {
      const className = types.get(m.rawClassType);
      if (className !== undefined) methods.set(className + '.' + m.name, { className, invoker: m.invoker, context: m.context });
    }
    return { raw: { methods, destructors: new Map(raw.classes.map((c) => [c.name, c.rawDestructor])) }, heap32: () => binding.HEAP32 };
  };`;
// Inside the emscripten module: embind's registration of a class and of a class method, each recorded
// in Module.__eeRaw as it happens (names read, raw functions resolved to callables).
const REGISTER_CLASS = 'downcast&&=embind__requireFunction(downcastSignature,downcast);rawDestructor=embind__requireFunction(destructorSignature,rawDestructor);';
const REGISTER_METHOD =
  'var __embind_register_class_function=(rawClassType,methodName,argCount,rawArgTypesAddr,invokerSignature,rawInvoker,context,isPureVirtual,isAsync)=>{var rawArgTypes=heap32VectorToArray(argCount,rawArgTypesAddr);methodName=readLatin1String(methodName);methodName=getFunctionName(methodName);rawInvoker=embind__requireFunction(invokerSignature,rawInvoker);';
const RECORD = 'var __eeRaw=(Module.__eeRaw??={classes:[],methods:[]});';

/** A fresh xgrammar instance (the WebAssembly module instantiates on its first use). */
export function loadXgrammar(): XgrammarModule {
  if (source === undefined) {
    const text = readFileSync(FILE, 'utf8');
    if (!text.includes(DYNAMIC_IMPORT) || [EXPORTS_END, REGISTER_CLASS, REGISTER_METHOD].some((t) => text.split(t).length !== 2))
      throw new Error(`${FILE}: not the @mlc-ai/web-xgrammar bundle this loader knows (0.1.27)`);
    source = text
      .replace(DYNAMIC_IMPORT, "require('module')")
      .replace(EXPORTS_END, WRITE_MASK)
      .replace(REGISTER_CLASS, `${REGISTER_CLASS}${RECORD}__eeRaw.classes.push({rawType,name,rawDestructor});`)
      .replace(REGISTER_METHOD, `${REGISTER_METHOD}${RECORD}__eeRaw.methods.push({rawClassType,name:methodName,invoker:rawInvoker,context});`);
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
