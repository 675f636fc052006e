// The chat page's Markdown renderer: model output must never become markup it did not generate.
// Besides exact outputs, every render is checked structurally (checkSafe): only allow-listed tags and
// attributes, http(s) hrefs only, no raw `<` that does not open an allowed tag.
import { describe, expect, it } from 'vitest';
import { escapeHtml, renderMarkdown } from '../../../src/gateway/ui/client/markdown.js';

const TAGS = new Set('p br strong em del code pre h1 h2 h3 h4 h5 h6 ul ol li blockquote hr a table thead tbody tr th td div span button'.split(' '));
const ATTRS = new Set(['class', 'href', 'rel', 'target', 'type', 'start']);

/** Structural safety check of renderer output; returns the output for chaining. */
function checkSafe(html: string): string {
  const tag = /<(\/?)([a-zA-Z0-9]+)((?:\s+[a-z]+="[^"<>]*")*)\s*>/g;
  let last = 0;
  for (let m; (m = tag.exec(html)); ) {
    expect(html.slice(last, m.index)).not.toMatch(/[<>"]/); // text between tags is fully escaped
    last = tag.lastIndex;
    expect(TAGS.has(m[2]!), `tag <${m[2]}>`).toBe(true);
    for (const a of m[3]!.matchAll(/([a-z]+)="([^"]*)"/g)) {
      expect(ATTRS.has(a[1]!), `attribute ${a[1]}`).toBe(true);
      if (a[1] === 'href') expect(a[2]).toMatch(/^https?:\/\/[^\s]+$/i);
      if (a[1] === 'class') expect(a[2]).toMatch(/^[A-Za-z0-9_+#. -]+$/);
      if (a[1] === 'start') expect(a[2]).toMatch(/^\d+$/);
    }
  }
  expect(html.slice(last)).not.toMatch(/[<>"]/);
  return html;
}
const md = (s: string) => checkSafe(renderMarkdown(s));

describe('escaping: HTML in model output stays text', () => {
  it('<script> and event-handler attributes', () => {
    expect(md('<script>alert(1)</script>')).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(md('<img src=x onerror="alert(1)">')).toBe('<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>');
    expect(md('<iframe src="https://evil.example"></iframe>')).not.toContain('<iframe');
    expect(md("<svg/onload=alert('x')>")).toBe('<p>&lt;svg/onload=alert(&#39;x&#39;)&gt;</p>');
  });

  it('HTML entities are shown literally, not decoded', () => {
    expect(md('&lt;script&gt; &amp; &#60;b&#62;')).toBe('<p>&amp;lt;script&amp;gt; &amp;amp; &amp;#60;b&amp;#62;</p>');
  });

  it('HTML inside code blocks and code spans is escaped too', () => {
    expect(md('```html\n<script>x</script>\n```')).toContain('<pre><code class="lang-html">&lt;script&gt;x&lt;/script&gt;</code></pre>');
    expect(md('`<b onclick=x>`')).toBe('<p><code>&lt;b onclick=x&gt;</code></p>');
  });

  it('a hostile fence language cannot reach the class attribute', () => {
    const out = md('```"><img src=x onerror=alert(1)>\ncode\n```');
    expect(out).not.toContain('<img');
    expect(out).not.toContain('lang-');
  });
});

describe('links', () => {
  it('http(s) links get rel=noopener and open in a new tab', () => {
    expect(md('[ERNIE](https://example.com/a?b=1&c=2)')).toBe(
      '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">ERNIE</a></p>',
    );
  });

  it('javascript:, data: and other schemes are never links', () => {
    for (const url of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,<script>x</script>', 'vbscript:x', '//evil.example', '&#106;avascript:alert(1)']) {
      const out = md(`[click](${url})`);
      expect(out, url).not.toContain('<a ');
    }
    expect(md('[x](java\nscript:alert(1))')).not.toContain('<a ');
  });

  it('a quote in a URL cannot break out of href', () => {
    const out = md('[x](https://a.example/"onmouseover="alert(1))');
    expect(out).not.toMatch(/onmouseover="/);
    expect(md('https://a.example/"onmouseover="alert(1)')).toContain('href="https://a.example/"');
  });

  it('bare URLs are linked without trailing punctuation or CJK text', () => {
    expect(md('see https://example.com/x.')).toBe(
      '<p>see <a href="https://example.com/x" rel="noopener noreferrer nofollow" target="_blank">https://example.com/x</a>.</p>',
    );
    expect(md('网址https://example.com，谢谢')).toContain('href="https://example.com"');
  });
});

describe('code', () => {
  it('nested backticks: a span closes only on a run of the same length', () => {
    expect(md('``a ` b``')).toBe('<p><code>a ` b</code></p>');
    expect(md('`` `x` ``')).toBe('<p><code>`x`</code></p>');
    expect(md('a ` b')).toBe('<p>a ` b</p>');
  });

  it('a longer fence contains a shorter one', () => {
    const out = md('````md\n```js\nx\n```\n````\nafter');
    expect(out).toContain('<code class="lang-md">```js\nx\n```</code>');
    expect(out).toMatch(/<p>after<\/p>$/);
  });

  it('an unclosed fence runs to the end (a reply still streaming)', () => {
    const out = md('intro\n```python\ndef f():\n    return "<x>"');
    expect(out).toContain('<code class="lang-python">def f():\n    return &quot;&lt;x&gt;&quot;</code></pre></div>');
  });

  it('Markdown inside code is not interpreted', () => {
    expect(md('```\n**not bold** [x](https://a.b)\n```')).toContain('<code>**not bold** [x](https://a.b)</code>');
    expect(md('`**x**`')).toBe('<p><code>**x**</code></p>');
  });
});

describe('block and inline syntax', () => {
  it('headings, emphasis, strike, rules, line breaks', () => {
    expect(md('## 标题 Title')).toBe('<h2>标题 Title</h2>');
    expect(md('**粗体** and *italic* and ~~gone~~ and snake_case_name')).toBe(
      '<p><strong>粗体</strong> and <em>italic</em> and <del>gone</del> and snake_case_name</p>',
    );
    expect(md('a\n\n---\n\nb')).toBe('<p>a</p><hr><p>b</p>');
    expect(md('春眠不觉晓\n处处闻啼鸟')).toBe('<p>春眠不觉晓<br>处处闻啼鸟</p>');
  });

  it('lists, nested lists and ordered starts', () => {
    expect(md('- a\n- b\n  - c\n- d')).toBe('<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>');
    expect(md('3. x\n4. y')).toBe('<ol start="3"><li>x</li><li>y</li></ol>');
    expect(md('1. x\n\n2. y')).toBe('<ol><li>x</li><li>y</li></ol>');
  });

  it('block quotes and tables', () => {
    expect(md('> quoted <b>\n> more')).toBe('<blockquote><p>quoted &lt;b&gt;<br>more</p></blockquote>');
    expect(md('| a | b |\n|---|--:|\n| 1 | <i>2</i> |')).toBe(
      '<div class="table-wrap"><table><thead><tr><th>a</th><th class="r">b</th></tr></thead>' +
        '<tbody><tr><td>1</td><td class="r">&lt;i&gt;2&lt;/i&gt;</td></tr></tbody></table></div>',
    );
  });

  it('NUL bytes (the internal placeholder marker) cannot forge held markup', () => {
    expect(md('\u00000\u0000 `x`')).toBe('<p>\uFFFD0\uFFFD <code>x</code></p>');
  });

  it('deeply nested quotes and lists do not recurse without bound', () => {
    checkSafe(renderMarkdown('&gt; '.repeat(10_000) + 'x'));
    checkSafe(renderMarkdown('> '.repeat(2_000) + 'x'));
    checkSafe(renderMarkdown(Array.from({ length: 200 }, (_, i) => ' '.repeat(i % 13) + '- x').join('\n')));
  });
});

describe('property: random mixes of hostile fragments and Markdown stay safe', () => {
  const parts = [
    '<script>', '</script>', '<img src=x onerror=alert(1)>', '<iframe>', '"', "'", '`', '``', '```', '```js', '~~~', '\n', '\n\n',
    '**', '*', '_', '~~', '[', ']', '(', ')', 'javascript:alert(1)', 'https://e.x/?a=1&b=2', '> ', '- ', '1. ', '# ', '|', '---',
    '&amp;', '&#60;', '\u0000', 'x', '中文', ' ', '    ', '\r\n',
  ];
  it('2000 seeded random documents', () => {
    let seed = 12345;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let n = 0; n < 2000; n++) {
      let s = '';
      const len = 1 + Math.floor(rand() * 40);
      for (let k = 0; k < len; k++) s += parts[Math.floor(rand() * parts.length)];
      const out = renderMarkdown(s);
      expect(() => checkSafe(out), JSON.stringify(s)).not.toThrow();
    }
  });

  it('escapeHtml covers the five HTML-significant characters', () => {
    expect(escapeHtml(`<>&"'`)).toBe('&lt;&gt;&amp;&quot;&#39;');
  });
});
