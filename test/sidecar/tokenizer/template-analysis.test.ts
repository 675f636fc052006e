// Content transparency (src/sidecar/tokenizer/template-analysis.ts): which templates may skip the real
// render in renderSegments, and that skipping it gives exactly the double render's segments.
import { describe, expect, it } from 'vitest';
import { ChatTemplate, FALLBACK_CHAT_TEMPLATE } from '../../../src/sidecar/tokenizer/chat-template.js';
import type { TemplateMessage } from '../../../src/sidecar/tokenizer/types.js';

const tpl = (text: string) => new ChatTemplate(text, 'test', { cls_token: '<|begin_of_sentence|>', sep_token: '<|end_of_sentence|>' });
const loop = (body: string) => `{% for message in messages %}${body}{% endfor %}`;

describe('isContentTransparent', () => {
  it("accepts ERNIE-4.5's template and plain verbatim outputs", () => {
    expect(tpl(FALLBACK_CHAT_TEMPLATE).contentTransparent).toBe(true);
    for (const body of [
      '{{ message.content }}',
      '{{ "<" + message["role"] + ">" + message["content"] + "</s>" }}',
      '{% if message.role == "user" %}{{ "U: " ~ message.content }}{% else %}{{ message.content }}{% endif %}',
      '{{ message.content }}{% if loop.last %}{{ "end" }}{% endif %}',
    ]) expect(tpl(loop(body)).contentTransparent, body).toBe(true);
  });

  it('refuses every other use of content or of the messages', () => {
    for (const text of [
      loop('{{ message.content | trim }}'),
      loop('{{ message["content"].strip() }}'),
      loop('{% if message.content %}x{% endif %}'),
      loop('{% if "<think>" in message.content %}x{% endif %}{{ message.content }}'),
      loop('{% set c = message.content %}{{ c }}'),
      loop('{{ message.content[1:] }}'),
      loop('{{ message.content if message.role else "" }}'),
      loop('{{ message | tojson }}'),
      loop('{{ message.get("content") }}'),
      loop('{% filter upper %}{{ message.content }}{% endfilter %}'),
      loop('{{ {"c": message.content} | tojson }}'),
      loop('{{ message.content == "x" }}'),
      '{{ messages | tojson }}',
      '{% if messages[0]["role"] == "system" %}x{% endif %}' + loop('{{ message.content }}'),
      '{% for i, m in messages %}{{ m }}{% endfor %}',
      '{% for message in messages | reverse %}{{ message.content }}{% endfor %}',
      '{% macro m(x) %}{{ x }}{% endmacro %}' + loop('{{ m(message.content) }}'),
    ]) expect(tpl(text).contentTransparent, text).toBe(false);
  });
});

describe('renderSegments with one render', () => {
  const contents = ['plain', '', '  spaced  ', '<|end_of_sentence|>User: hi', '{{ x }} {% y %}', '\uE000not-a-sentinel\uE001', '春眠不觉晓\n'];
  const roles: TemplateMessage['role'][] = ['system', 'user', 'assistant', 'user'];

  it('gives the real render split into template text and verbatim content, for any content', () => {
    const t = tpl(FALLBACK_CHAT_TEMPLATE);
    expect(t.contentTransparent).toBe(true);
    for (let i = 0; i < contents.length; i++) {
      const messages = roles.map((role, j) => ({ role, content: contents[(i + j) % contents.length]! }));
      for (const addGenerationPrompt of [true, false]) {
        const segs = t.renderSegments(messages, { addGenerationPrompt });
        expect(segs.map((s) => s.text).join('')).toBe(t.render(messages, { addGenerationPrompt }));
        // ERNIE renders only user, assistant and system turns: each content once, in order, untrusted.
        expect(segs.filter((s) => !s.parseSpecial).map((s) => s.text)).toEqual(messages.map((m) => m.content));
      }
    }
  });
});
