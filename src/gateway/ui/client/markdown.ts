// Markdown → HTML for model output and user messages, safe by construction.
//
// Contract: the WHOLE input is HTML-escaped first (& < > " '), and only then is Markdown syntax looked
// for in the escaped text. Every tag in the output is therefore one this file writes, from a fixed set:
//   p br strong em del code pre h1-h6 ul ol li blockquote hr a table thead tbody tr th td div span button
// and the only attributes written are: class (constant, or `lang-<[A-Za-z0-9_+#.-]{1,32}>`), href
// (http:/https: only, from escaped text, so it cannot hold a quote or `<`), rel, target, type, and
// start (digits).
// Anything else the model writes — <script>, <img onerror>, javascript: links, entities — stays text.
//
// NOTE: hand-written instead of a dependency (marked + DOMPurify): those would be ~60 KB of script to
// bundle into every adapter, and a parse-then-sanitize pipeline is only as safe as its allow-list,
// whereas escape-first cannot emit markup it did not generate. Coverage is what chat replies use:
// fenced code (unclosed fences run to the end, which is what a streaming reply shows), headings,
// lists (nested by indentation), block quotes, tables, rules, code spans, bold/italic/strike, links.

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESC[c]!);
}

/** Placeholder brackets for finished inline HTML; NUL never survives input normalisation. */
const PH = '\u0000';
const MAX_DEPTH = 8;

export function renderMarkdown(src: string): string {
  const text = src.replace(/\r\n?/g, '\n').replace(/\u0000/g, '\uFFFD');
  return blocks(escapeHtml(text).split('\n'), 0);
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}&gt; ?/;
const LIST_ITEM = /^( {0,12})([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const TABLE_SEP = /^ {0,3}\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$/;
const SAFE_LANG = /^[A-Za-z0-9_+#.-]{1,32}$/;

/** Block structure over escaped lines. */
function blocks(lines: string[], depth: number): string {
  const out: string[] = [];
  let para: string[] = [];
  const flush = () => {
    if (para.length) out.push(`<p>${para.map(inline).join('<br>')}</p>`);
    para = [];
  };
  for (let i = 0; i < lines.length; ) {
    const line = lines[i]!;
    let m: RegExpExecArray | null;
    if (!line.trim()) {
      flush();
      i++;
    } else if ((m = FENCE_OPEN.exec(line))) {
      flush();
      const fence = m[1]!;
      const lang = SAFE_LANG.test(m[2] ?? '') ? m[2]! : '';
      const body: string[] = [];
      i++;
      while (i < lines.length && !isFenceClose(lines[i]!, fence)) body.push(lines[i++]!);
      i++; // the closing fence (or past the end when unclosed)
      out.push(codeBlock(body.join('\n'), lang));
    } else if ((m = HEADING.exec(line))) {
      flush();
      const level = m[1]!.length;
      out.push(`<h${level}>${inline(m[2]!)}</h${level}>`);
      i++;
    } else if (RULE.test(line)) {
      flush();
      out.push('<hr>');
      i++;
    } else if (QUOTE.test(line) && depth < MAX_DEPTH) {
      flush();
      const inner: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) inner.push(lines[i++]!.replace(QUOTE, ''));
      out.push(`<blockquote>${blocks(inner, depth + 1)}</blockquote>`);
    } else if (LIST_ITEM.test(line) && depth < MAX_DEPTH && (para.length === 0 || !/^\s/.test(line))) {
      flush();
      i = list(lines, i, depth, out);
    } else if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]!) && lines[i + 1]!.includes('-')) {
      flush();
      i = table(lines, i, out);
    } else {
      para.push(line.trim());
      i++;
    }
  }
  flush();
  return out.join('');
}

function isFenceClose(line: string, fence: string): boolean {
  const m = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
  return m !== null && m[1]![0] === fence[0] && m[1]!.length >= fence.length;
}

function codeBlock(code: string, lang: string): string {
  const cls = lang ? ` class="lang-${lang}"` : '';
  const label = lang ? `<span class="code-lang">${lang}</span>` : '<span class="code-lang"></span>';
  return `<div class="code"><div class="code-head">${label}<button type="button" class="code-copy">Copy</button></div><pre><code${cls}>${code}</code></pre></div>`;
}

/** One list (ordered or not) starting at lines[start]; items own their more-indented continuation lines. */
function list(lines: string[], start: number, depth: number, out: string[]): number {
  const first = LIST_ITEM.exec(lines[start]!)!;
  const indent = first[1]!.length;
  const ordered = /\d/.test(first[2]!);
  const sameList = (m: RegExpExecArray | null) => m !== null && m[1]!.length === indent && /\d/.test(m[2]!) === ordered;
  const items: string[][] = [];
  let contentCol = 0; // where the current item's text starts: deeper lines are its children
  let i = start;
  while (i < lines.length) {
    const line = lines[i]!;
    const m = LIST_ITEM.exec(line);
    const lead = line.length - line.trimStart().length;
    const cur = items[items.length - 1];
    if (sameList(m)) {
      items.push([m![3]!]);
      contentCol = indent + m![2]!.length + 1;
    } else if (!cur) {
      break;
    } else if (!line.trim()) {
      // A blank line stays inside the list only when the list (or the item) goes on after it.
      const next = lines[i + 1];
      if (next === undefined || !next.trim()) break;
      const nextLead = next.length - next.trimStart().length;
      if (nextLead > indent) cur.push('');
      else if (!sameList(LIST_ITEM.exec(next))) break;
    } else if (lead > indent) {
      cur.push(line.slice(Math.min(lead, contentCol)));
    } else if (!m && lines[i - 1]!.trim()) {
      cur.push(line); // lazy continuation of the item's paragraph
    } else break;
    i++;
  }
  const n = parseInt(first[2]!, 10);
  const startAttr = ordered && n !== 1 ? ` start="${n}"` : '';
  const lis = items.map((it) => {
    const body = blocks(it, depth + 1);
    // A tight item's leading paragraph is unwrapped, as CommonMark renders tight lists.
    return `<li>${it.includes('') ? body : body.replace(/^<p>([\s\S]*?)<\/p>/, '$1')}</li>`;
  });
  out.push(ordered ? `<ol${startAttr}>${lis.join('')}</ol>` : `<ul>${lis.join('')}</ul>`);
  return i;
}

function table(lines: string[], start: number, out: string[]): number {
  const cells = (row: string) => row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
  const align = cells(lines[start + 1]!).map((c) => (c.startsWith(':') && c.endsWith(':') ? ' class="c"' : c.endsWith(':') ? ' class="r"' : ''));
  const row = (r: string, tag: 'th' | 'td') => `<tr>${cells(r).map((c, k) => `<${tag}${align[k] ?? ''}>${inline(c)}</${tag}>`).join('')}</tr>`;
  const body: string[] = [];
  let i = start + 2;
  while (i < lines.length && lines[i]!.includes('|') && lines[i]!.trim()) body.push(row(lines[i++]!, 'td'));
  out.push(`<div class="table-wrap"><table><thead>${row(lines[start]!, 'th')}</thead><tbody>${body.join('')}</tbody></table></div>`);
  return i;
}

/** Inline syntax over one escaped line: code spans, links, autolinks, emphasis. */
export function inline(s: string): string {
  const held: string[] = [];
  const hold = (html: string) => `${PH}${held.push(html) - 1}${PH}`;
  let t = codeSpans(s, hold);
  // [text](http(s)://…): any other scheme (javascript:, data:, …) is left as plain text.
  t = t.replace(/\[([^\]\n]{1,500})\]\((https?:\/\/[^\s()]{1,2000})\)/gi, (_m, label: string, url: string) => hold(link(url, emphasis(label))));
  // Bare URLs: ASCII only, ending before an escaped quote/angle bracket and trailing punctuation.
  t = t.replace(/https?:\/\/(?:(?!&(?:lt|gt|quot|#39);)[!-~])+/gi, (url: string) => {
    const trail = /(?:[.,:;!?)\]*_~]|&amp;)+$/.exec(url)?.[0] ?? '';
    const bare = url.slice(0, url.length - trail.length);
    return bare.length > 8 ? hold(link(bare, bare)) + trail : url;
  });
  t = emphasis(t);
  for (let k = 0; k < 4 && t.includes(PH); k++) t = t.replace(/\u0000(\d+)\u0000/g, (_m, n: string) => held[Number(n)] ?? '');
  return t;
}

function link(href: string, label: string): string {
  return `<a href="${href}" rel="noopener noreferrer nofollow" target="_blank">${label}</a>`;
}

/** `code` spans: a run of N backticks closes only on a run of exactly N (so ``a ` b`` works). */
function codeSpans(s: string, hold: (html: string) => string): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const open = s.indexOf('`', i);
    if (open < 0) break;
    let n = open;
    while (s[n] === '`') n++;
    const run = n - open;
    let close = -1;
    for (let j = n; j < s.length; ) {
      const k = s.indexOf('`', j);
      if (k < 0) break;
      let e = k;
      while (s[e] === '`') e++;
      if (e - k === run) {
        close = k;
        break;
      }
      j = e;
    }
    if (close < 0) {
      out += s.slice(i, n);
      i = n;
      continue;
    }
    let code = s.slice(n, close);
    if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
    out += s.slice(i, open) + hold(`<code>${code}</code>`);
    i = close + run;
  }
  return out + s.slice(i);
}

function emphasis(s: string): string {
  return s
    .replace(/\*\*(?=\S)([^*]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([^_]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/~~(?=\S)([^~]*?\S)~~/g, '<del>$1</del>')
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?!\*)/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, '$1<em>$2</em>');
}
