// The tool-call reader (src/gateway/tools/call-stream.ts) with the hermes parser: whole texts and the
// same texts cut at every position give the same content and calls; markup never leaks into content.
import { describe, expect, it } from 'vitest';
import { ToolCallStream, type CallPiece } from '../../src/gateway/tools/call-stream.js';
import { hermesParser } from '../../src/gateway/tools/hermes.js';
import { toolMessage } from '../../src/gateway/tools/message.js';
import { DEFAULT_TOOL_CALL_PARSER, TOOL_CALL_PARSERS, toolCallParser } from '../../src/gateway/tools/parser.js';

const call = (name: string, args: string) => hermesParser.formatCall(name, args);

/** Feeds `parts` in order; returns the content and the calls rebuilt from the deltas, as a client does. */
function replay(parts: string[]) {
  let n = 0;
  const s = new ToolCallStream(hermesParser, () => `call_${n++}`);
  const pieces: CallPiece[] = parts.map((p) => s.push(p));
  pieces.push(s.finish());
  let content = '';
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const p of pieces) {
    content += p.content;
    for (const d of p.calls) {
      if (d.id !== undefined) {
        expect(d).toEqual({ index: calls.length, id: d.id, type: 'function', function: { name: d.function.name, arguments: '' } });
        calls.push({ id: d.id, name: d.function.name!, arguments: '' });
      } else {
        expect(d.function.name).toBeUndefined();
        calls[d.index]!.arguments += d.function.arguments;
      }
    }
  }
  expect(s.content).toBe(content);
  expect(s.calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }))).toEqual(calls);
  return { content, calls };
}

const CASES: { text: string; content: string; calls: [string, unknown][] }[] = [
  { text: 'Just text, no call.\n', content: 'Just text, no call.\n', calls: [] },
  { text: 'a < b and <tool but not a call', content: 'a < b and <tool but not a call', calls: [] },
  { text: call('get_weather', '{"city": "Paris"}'), content: '', calls: [['get_weather', { city: 'Paris' }]] },
  {
    text: `Let me check.\n${call('f', '{"a": {"b": [1, 2, "}"]}, "c": "x\\"}"}')}\n${call('g', '{}')}\n`,
    content: 'Let me check.',
    calls: [['f', { a: { b: [1, 2, '}'] }, c: 'x"}' }], ['g', {}]],
  },
  { text: `<tool_call>\n  {  "name" : "h" ,"arguments":{"k":"v"}  }  \n</tool_call>`, content: '', calls: [['h', { k: 'v' }]] },
  { text: '<tool_call>\nnot json</tool_call> after', content: '<tool_call>\nnot json</tool_call> after', calls: [] },
  { text: 'ends with a partial <tool_ca', content: 'ends with a partial <tool_ca', calls: [] },
  { text: '你好 <tool_call>\n{"name": "名", "arguments": {"城市": "北京"}}\n</tool_call>', content: '你好', calls: [['名', { 城市: '北京' }]] },
];

describe('tool-call parsers', () => {
  it('registers hermes as the default', () => {
    expect(TOOL_CALL_PARSERS).toContain('hermes');
    expect(DEFAULT_TOOL_CALL_PARSER).toBe('hermes');
    expect(toolCallParser('hermes')).toBe(hermesParser);
    expect(toolCallParser('nope')).toBeUndefined();
  });

  it.each(CASES)('reads %#: whole and cut at every position alike', ({ text, content, calls }) => {
    const whole = replay([text]);
    expect(whole.content).toBe(content);
    expect(whole.calls.map((c) => [c.name, JSON.parse(c.arguments) as unknown])).toEqual(calls);
    const chars = [...text];
    for (let cut = 1; cut < chars.length; cut++) {
      expect(replay([chars.slice(0, cut).join(''), chars.slice(cut).join('')])).toEqual(whole);
    }
    expect(replay(chars)).toEqual(whole);
  });

  it('never lets markup reach content before it is known not to be a call', () => {
    const s = new ToolCallStream(hermesParser, () => 'call_x');
    expect(s.push('Hi <tool_')).toEqual({ content: 'Hi', calls: [] });
    expect(s.push('call>\n{"name": "f", ')).toEqual({ content: '', calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'f', arguments: '' } }] });
    expect(s.push('"arguments": {"a"')).toEqual({ content: '', calls: [{ index: 0, function: { arguments: '{"a"' } }] });
    expect(s.push(': 1}}\n</tool_call>')).toEqual({ content: '', calls: [{ index: 0, function: { arguments: ': 1}' } }] });
    expect(s.finish()).toEqual({ content: '', calls: [] });
  });

  it('keeps a call cut short (max_tokens) as far as it was written', () => {
    const text = call('f', '{"a": 1}');
    const r = replay([text.slice(0, text.indexOf('1}'))]);
    expect(r.calls).toEqual([{ id: 'call_0', name: 'f', arguments: '{"a": ' }]);
  });

  it('toolMessage: content null with only calls, tool_calls left out without', () => {
    expect(toolMessage(hermesParser, 'plain')).toEqual({ content: 'plain' });
    const m = toolMessage(hermesParser, `${call('f', '{"x": true}')}\n`);
    expect(m.content).toBeNull();
    expect(m.tool_calls).toEqual([{ id: expect.stringMatching(/^call_[0-9a-f]{24}$/) as unknown, type: 'function', function: { name: 'f', arguments: '{"x": true}' } }]);
  });

  it('formats what the structural tag accepts', () => {
    const tag = hermesParser.callTag('f', { type: 'object' });
    const text = call('f', '{"a": 1}');
    expect(text.startsWith(tag.begin)).toBe(true);
    expect(text.endsWith(tag.end)).toBe(true);
    expect(text.slice(tag.begin.length, text.length - tag.end.length)).toBe('{"a": 1}');
    expect(tag.begin.startsWith(hermesParser.start)).toBe(true);
  });
});
