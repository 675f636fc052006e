// Tools in the chat template (src/sidecar/tokenizer/bundle.ts): ERNIE-4.5's template ignores `tools`,
// so the gateway's fallback conversation is rendered (the tools' system block, calls and results as
// hermes markup); a template that renders tools itself gets them once, never the block as well.
// --chat-template, the request's chat_template (trusted or not) and chat_template_kwargs.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hermesParser } from '../../../src/gateway/tools/hermes.js';
import { fallbackConversation } from '../../../src/gateway/tools/prompt.js';
import { EngineError, type ChatMessage, type ToolDefinition } from '../../../src/protocol/engine-client.js';
import { promptSize } from '../../../src/sidecar/server/input-size.js';
import { ChatTemplate } from '../../../src/sidecar/tokenizer/chat-template.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { GOLDEN_FILES, makeCheckpoint, removeCheckpoints } from './helpers.js';

afterAll(removeCheckpoints);

const tools: ToolDefinition[] = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
];
const messages: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
  { role: 'tool', content: '{"temp": 21}', tool_call_id: 'call_1' },
];
const fallback = fallbackConversation(messages, tools, hermesParser);
const block = hermesParser.systemPrompt(tools);

/** A template that renders tools and tool calls itself (the shape of Qwen's and Hermes'). */
const TOOL_AWARE =
  '{%- if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>\n{% endif -%}' +
  '{%- for m in messages %}{{ m.role }}: {{ m.content }}' +
  '{%- if m.tool_calls %}{% for c in m.tool_calls %}[call {{ c.function.name }} city={{ c.function.arguments.city }}]{% endfor %}{% endif %}{{ "\\n" }}{% endfor -%}' +
  '{%- if greeting is defined %}{{ greeting }}{{ "\\n" }}{% endif %}{% if add_generation_prompt %}assistant:{% endif %}';

let dir: string;
let ernie: TokenizerBundle;
let aware: TokenizerBundle;
beforeAll(async () => {
  dir = await makeCheckpoint({ 'tokenizer.json': GOLDEN_FILES.json, 'tokenizer_config.json': GOLDEN_FILES.config });
  ernie = await loadTokenizerBundle(dir);
  aware = await loadTokenizerBundle(dir, { chatTemplate: TOOL_AWARE });
});

const engineError = (f: () => unknown): EngineError => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error('expected an EngineError');
};

describe('a template that ignores tools (ERNIE-4.5)', () => {
  it('renders the fallback: the tools block in the system turn, calls and results as markup', () => {
    expect(ernie.template.rendersTools).toBe(false);
    const text = ernie.renderChat(messages, { tools, toolFallback: fallback });
    expect(text).toBe(
      `<|begin_of_sentence|>Be brief.\n\n${block}\nUser: Weather in Paris?\n` +
        `Assistant: ${hermesParser.formatCall('get_weather', '{"city": "Paris"}')}<|end_of_sentence|>` +
        'User: <tool_response>\n{"temp": 21}\n</tool_response>\nAssistant: ',
    );
    expect(text.split('# Tools')).toHaveLength(2);
    expect(text).toContain(JSON.stringify(tools[0]));
    // without tools the same messages render as before (the tool turn is dropped by ERNIE's template)
    expect(ernie.renderChat(messages)).not.toContain('# Tools');
  });

  it('encodes the fallback injection-safe: the block and markup are content, the markers control ids', () => {
    const ids = ernie.encodeChat(messages, { tools, toolFallback: fallback });
    const eos = ernie.tokenizer.tokenToId('<|end_of_sentence|>')!;
    expect(ids.filter((id) => id === eos)).toHaveLength(1); // one assistant turn closed
    expect(ernie.tokenizer.decode(ids)).toBe(ernie.renderChat(messages, { tools, toolFallback: fallback }));
  });
});

describe('a template that renders tools (--chat-template)', () => {
  it('gets tools and tool calls (arguments as an object), and no fallback block', () => {
    expect(aware.template.source).toBe('--chat-template');
    expect(aware.template.rendersTools).toBe(true);
    const text = aware.renderChat(messages, { tools, toolFallback: fallback });
    expect(text).toBe(
      '<tools>get_weather;</tools>\nsystem: Be brief.\nuser: Weather in Paris?\nassistant: [call get_weather city=Paris]\ntool: {"temp": 21}\nassistant:',
    );
    expect(text).not.toContain('# Tools');
    expect(text).not.toContain('<tool_call>');
  });
});

describe('chat_template_kwargs and the request chat_template', () => {
  it('kwargs become template variables; reserved and special-token names are refused', () => {
    expect(aware.renderChat([{ role: 'user', content: 'hi' }], { chatTemplateKwargs: { greeting: 'hello' } })).toBe('user: hi\nhello\nassistant:');
    for (const name of ['messages', 'tools', 'add_generation_prompt', 'cls_token']) {
      const e = engineError(() => ernie.encodeChat([{ role: 'user', content: 'hi' }], { chatTemplateKwargs: { [name]: 'x' } }));
      expect(e.code).toBe('INVALID_REQUEST');
      expect(e.param).toBe('chat_template_kwargs');
      expect(e.message).toContain(name);
    }
  });

  it('a request template is refused without --trust-request-chat-template, used with it', async () => {
    const e = engineError(() => ernie.encodeChat([{ role: 'user', content: 'hi' }], { chatTemplate: '{{ messages[0].content }}' }));
    expect([e.code, e.param]).toEqual(['INVALID_REQUEST', 'chat_template']);
    expect(e.message).toContain('--trust-request-chat-template');
    const trusting = await loadTokenizerBundle(dir, { trustRequestChatTemplate: true });
    expect(trusting.renderChat([{ role: 'user', content: 'hi' }], { chatTemplate: '[{{ messages[0].content }}]' })).toBe('[hi]');
    // the request's template decides about tools too
    expect(trusting.renderChat(messages, { tools, toolFallback: fallback, chatTemplate: TOOL_AWARE })).toContain('<tools>get_weather;</tools>');
    const bad = engineError(() => trusting.encodeChat([{ role: 'user', content: 'hi' }], { chatTemplate: '{% for %}' }));
    expect([bad.code, bad.param]).toEqual(['INVALID_REQUEST', 'chat_template']);
  });
});

describe('whether a template renders tools is decided once per template', () => {
  it('the server template and each request template: one probe (two renders), then one render per request', async () => {
    const trusting = await loadTokenizerBundle(dir, { trustRequestChatTemplate: true });
    const render = vi.spyOn(ChatTemplate.prototype, 'render');
    try {
      for (const chatTemplate of [undefined, TOOL_AWARE, undefined, TOOL_AWARE]) {
        trusting.renderChat(messages, { tools, toolFallback: fallback, ...(chatTemplate ? { chatTemplate } : {}) });
      }
      // 2 probe renders for the server template, 2 for the request template, then 4 requests.
      expect(render).toHaveBeenCalledTimes(8);
      render.mockClear();
      trusting.renderChat(messages, { tools, toolFallback: fallback, chatTemplate: TOOL_AWARE });
      expect(render).toHaveBeenCalledTimes(1);
    } finally {
      render.mockRestore();
    }
  });
});

describe('sizes', () => {
  it('a chat prompt counts its tool fallback when that is the larger text (what a tool-ignoring template tokenizes)', () => {
    const base = { kind: 'chat' as const, messages, addGenerationPrompt: true };
    const plain = promptSize(base);
    const withTools = promptSize({ ...base, tools, toolFallback: fallback });
    expect(plain.chars).toBe(messages.reduce((n, m) => n + m.content.length, 0));
    expect(withTools.chars).toBe(fallback.reduce((n, m) => n + m.content.length, 0));
    expect(withTools.chars).toBeGreaterThan(plain.chars + block.length - 1);
    expect(withTools.messages).toBe(messages.length);
  });
});
