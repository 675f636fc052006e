// What each tool_choice's constraint accepts, checked with xgrammar itself (the sidecar's loader and
// source compaction, a one-character-per-token vocabulary): the hermes markup of valid calls passes;
// a wrong name, arguments off the schema, whitespace inside them, text where only calls may stand, and
// (auto) anything after the trigger that is not a valid call do not.
import { beforeAll, describe, expect, it } from 'vitest';
import { hermesParser } from '../../src/gateway/tools/hermes.js';
import { toolPlan } from '../../src/gateway/tools/plan.js';
import type { Constraint } from '../../src/protocol/engine-client.js';
import { lowerSource } from '../../src/sidecar/grammar/compile-lowering.js';
import { compileSource, grammarSource } from '../../src/sidecar/grammar/source.js';
import { loadXgrammar, type XgrammarModule } from '../../src/sidecar/grammar/xgrammar.js';

const tools = [
  { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city'] } } },
  { type: 'function' as const, function: { name: 'ping' } },
];
const cfg = { parser: hermesParser, autoToolChoice: true };
const call = (name: string, args: string) => hermesParser.formatCall(name, args);

let xg: XgrammarModule;
let vocab: string[];
let accepts: (c: Constraint, text: string) => Promise<boolean>;
beforeAll(async () => {
  xg = loadXgrammar();
  vocab = ['</s>', '\n', '\t'];
  for (let c = 32; c < 127; c++) vocab.push(String.fromCharCode(c));
  const info = await xg.TokenizerInfo.createTokenizerInfo(vocab, 'raw', false, vocab.length, [0]);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  /** The whole text is accepted and the grammar may end there (the stop id is allowed next). */
  accepts = async (c, text) => {
    const compiled = await compileSource(compiler, await lowerSource(xg, grammarSource(c)));
    const m = await xg.GrammarMatcher.createGrammarMatcher(compiled);
    for (const ch of text) if (!m.acceptToken(vocab.indexOf(ch))) return false;
    return m.acceptToken(0);
  };
});

const constraint = (extra: object) => toolPlan({ tools, ...extra }, cfg)!.constraint;

describe('the lowered constraints, compiled by xgrammar', () => {
  it('required: one or more valid calls, compact arguments, nothing else', async () => {
    const c = constraint({ tool_choice: 'required' });
    expect(await accepts(c, call('get_weather', '{"city":"Paris","days":3}'))).toBe(true);
    expect(await accepts(c, `${call('get_weather', '{"city":"Rome"}')}\n${call('ping', '{}')}`)).toBe(true);
    expect(await accepts(c, '')).toBe(false);
    expect(await accepts(c, `Sure. ${call('ping', '{}')}`)).toBe(false);
    expect(await accepts(c, call('get_weather', '{"city":"Oslo"}'))).toBe(false);
    expect(await accepts(c, call('get_weather', '{"city":"Paris","days":9}'))).toBe(false);
    expect(await accepts(c, call('get_weather', '{ "city":"Paris"}'))).toBe(false);
    expect(await accepts(c, call('get_weather', '{"city":"Paris","extra":1}'))).toBe(false);
    expect(await accepts(c, call('other', '{}'))).toBe(false);
    expect(await accepts(c, call('ping', '{"a":1}'))).toBe(false);
  });

  it('parallel_tool_calls false and named: exactly one call', async () => {
    const single = constraint({ tool_choice: 'required', parallel_tool_calls: false });
    expect(await accepts(single, call('ping', '{}'))).toBe(true);
    expect(await accepts(single, `${call('ping', '{}')}\n${call('ping', '{}')}`)).toBe(false);
    const named = constraint({ tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(await accepts(named, call('get_weather', '{"city":"Rome","days":1}'))).toBe(true);
    expect(await accepts(named, call('ping', '{}'))).toBe(false);
  });

  it('auto: free text, and after the trigger only a valid call', async () => {
    const c = constraint({ tool_choice: 'auto' });
    expect(await accepts(c, 'Just an answer, a < b.')).toBe(true);
    expect(await accepts(c, `Let me look.\n${call('get_weather', '{"city":"Paris"}')}`)).toBe(true);
    expect(await accepts(c, 'Text <tool_call>\n{"name": "other"')).toBe(false);
    expect(await accepts(c, `Text ${call('get_weather', '{"city":"Lima"}')}`)).toBe(false);
    expect(await accepts(c, '<tool_call>oops')).toBe(false);
  });
});
