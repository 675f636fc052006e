// The chat page in a real browser against the real gateway app (fake engine): streaming, stop,
// regenerate, edit-and-resend, history across reloads, conversations and their settings, attachments.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { HAVE_CHROMIUM, CHROMIUM, RICH_REPLY, SHOTS, changesOver, launchBrowser, metric, recordLengths, replyDone, sel, startServer, watchErrors, type Browser, type TestServer } from './harness.js';

const MODEL = 'baidu/ERNIE-4.5-0.3B-PT';
if (!HAVE_CHROMIUM) console.warn(`chat page browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

describe.skipIf(!HAVE_CHROMIUM)('chat page (Chromium)', () => {
  let browser: Browser;
  let srv: TestServer | null = null;
  let page: Page | null = null;
  let errors: string[] = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await page?.close();
    await srv?.close();
    [page, srv] = [null, null];
    expect(errors).toEqual([]);
  });

  async function open(s: TestServer): Promise<Page> {
    srv = s;
    page = await browser.context.newPage();
    errors = watchErrors(page);
    await page.goto(s.url);
    await expect.poll(() => page!.textContent('#model-name')).toBe(MODEL);
    return page;
  }
  const replyLength = (p: Page) => p.evaluate(() => [...document.querySelectorAll('.msg.assistant .md')].pop()?.textContent?.length ?? 0);

  it('streams a reply progressively, renders Markdown, shows stats, and keeps it across a reload', async () => {
    const p = await open(await startServer({}, { corpus: RICH_REPLY, fixedStart: 0, stepDelayMs: 12, tokensPerStep: 2 }));
    await expect.poll(() => p.getAttribute('#status-dot', 'data-state')).toBe('ready');
    await p.click(sel.prompt);
    await p.keyboard.type('写一首诗');
    await p.keyboard.press('Shift+Enter'); // a new line, not a send
    await p.keyboard.type('and explain it');
    expect(await p.inputValue(sel.prompt)).toBe('写一首诗\nand explain it');
    expect(srv!.engine.submitted).toHaveLength(0);

    const lengths = recordLengths(p);
    // Steps held until the reply's bubble is on the page, so the recorder sees the reply from its start
    // however slowly the page runs (the first length it records is then the empty bubble's).
    const started = srv!.engine.holdSteps();
    await p.keyboard.press('Enter');
    await p.waitForSelector('.msg.assistant[data-state="streaming"]');
    started();
    await p.waitForFunction(() => ([...document.querySelectorAll('.msg.assistant .md')].pop()?.textContent?.length ?? 0) > 110);
    // Held a third of the way in, so the mid-stream checks cannot race the stream's end.
    const release = srv!.engine.holdSteps();
    expect(await p.getAttribute(sel.reply, 'data-state')).toBe('streaming');
    expect(await p.textContent(sel.send)).toBe('Stop');
    await p.screenshot({ path: join(SHOTS, 'mid-stream.png') });
    release();
    const seen = await lengths;
    expect(seen.length).toBeGreaterThanOrEqual(6); // several distinct lengths before the end
    // Rendered length may dip when Markdown closes (`**x` → <strong>x), but it grows from near 0 to the end.
    expect(seen[0]!).toBeLessThan(seen[seen.length - 1]! / 5);
    expect(Math.max(...seen)).toBe(seen[seen.length - 1]);
    expect(await replyDone(p)).toBe('done');

    expect(srv!.engine.submitted[0]!.prompt).toMatchObject({ kind: 'chat', messages: [{ role: 'user', content: '写一首诗\nand explain it' }] });
    const body = p.locator(sel.replyBody);
    expect(await body.locator('h2').textContent()).toBe('春晓 · 孟浩然');
    expect(await body.locator('ol > li').count()).toBe(3);
    expect(await body.locator('pre code.lang-python').textContent()).toContain('return f"你好，{name}！"');
    expect(await body.locator('tbody tr').count()).toBe(2);
    expect(await body.locator('a').getAttribute('href')).toBe('https://github.com/PaddlePaddle/ERNIE');
    expect(await body.locator('a').getAttribute('rel')).toBe('noopener noreferrer nofollow');
    const completion = [...RICH_REPLY].length + 1; // the fake's one lap of the corpus, then EOS
    expect(await p.textContent('.msg.assistant .stats')).toMatch(new RegExp(`^TTFT \\d+ ms · [\\d.,]+ tok/s · \\d+ prompt \\+ ${completion} completion tokens$`));
    expect(await p.textContent(sel.send)).toBe('Send');
    await p.screenshot({ path: join(SHOTS, 'desktop-light.png') });

    const text = await body.textContent();
    await p.reload();
    await expect.poll(() => p.locator('.msg').count()).toBe(2);
    expect(await p.locator(sel.replyBody).textContent()).toBe(text);
    expect(await p.textContent('.msg.user .md')).toBe('写一首诗and explain it'); // <br> between the lines
    expect(await p.textContent('.conv.active .conv-open')).toBe('写一首诗 and explain it');
  });

  it('Stop aborts the engine request and frees its KV blocks; then regenerate, edit-and-resend, Escape', async () => {
    const p = await open(await startServer({}, { stepDelayMs: 15 }));
    await p.fill(sel.prompt, 'hello');
    await p.press(sel.prompt, 'Enter');
    await p.waitForFunction(() => ([...document.querySelectorAll('.msg.assistant .md')].pop()?.textContent?.length ?? 0) > 8);
    const during = await srv!.metrics();
    expect(metric(during, 'vllm:num_requests_running')).toBe(1);
    expect(metric(during, 'vllm:kv_cache_usage_perc')).toBeGreaterThan(0);

    await p.click(sel.send); // the Stop button
    expect(await replyDone(p)).toBe('stopped');
    const id = srv!.engine.submitted[0]!.id;
    await expect.poll(() => srv!.engine.abortedIds()).toContain(id);
    await expect.poll(() => srv!.engine.active).toBe(0);
    const after = await srv!.metrics();
    expect(metric(after, 'vllm:num_requests_running')).toBe(0);
    expect(metric(after, 'vllm:kv_cache_usage_perc')).toBe(0);
    expect(await p.textContent('.msg.assistant .stats')).toMatch(/stopped$/);
    const stoppedAt = await replyLength(p);
    expect(stoppedAt).toBeLessThan(100);
    // Nothing arrives after the stop: no change to the reply over the page's next 10 frames (the
    // engine has already dropped the request, so there is nothing left to come but stray bytes).
    expect(await changesOver(p, sel.replyBody, 10)).toBe(0);
    expect(await replyLength(p)).toBe(stoppedAt);
    expect(await p.textContent(sel.send)).toBe('Send');

    await p.click('.regen-btn');
    expect(await replyDone(p)).toBe('done');
    expect(srv!.engine.submitted).toHaveLength(2);
    expect(srv!.engine.submitted[1]!.prompt).toMatchObject({ messages: [{ role: 'user', content: 'hello' }] });
    expect(await p.locator('.msg').count()).toBe(2); // the stopped reply was replaced

    await p.click('.msg.user .edit-btn');
    await p.fill('.edit-area', 'hello again');
    await p.press('.edit-area', 'Enter');
    expect(await replyDone(p)).toBe('done');
    expect(srv!.engine.submitted[2]!.prompt).toMatchObject({ messages: [{ role: 'user', content: 'hello again' }] });
    expect(await p.locator('.msg').count()).toBe(2);
    expect(await p.textContent('.msg.user .md')).toBe('hello again');

    await p.fill(sel.prompt, 'one more');
    await p.press(sel.prompt, 'Enter');
    await p.waitForFunction(() => ([...document.querySelectorAll('.msg.assistant .md')].pop()?.textContent?.length ?? 0) > 3);
    await p.keyboard.press('Escape');
    expect(await replyDone(p)).toBe('stopped');
    await expect.poll(() => srv!.engine.abortedIds()).toContain(srv!.engine.submitted[3]!.id);
  });

  it('conversations: new, rename, delete, and per-conversation system prompt and sampling, across reloads', async () => {
    const p = await open(await startServer());
    await p.click('#toggle-settings');
    await p.fill('#system-prompt', 'Be brief. 请简短回答。');
    await p.fill('#p-temperature', '0.3');
    await p.fill('#p-top-p', '0.9');
    await p.fill('#p-max-tokens', '20');
    await p.press('#p-max-tokens', 'Tab'); // number fields commit on change
    await p.fill(sel.prompt, 'first');
    await p.press(sel.prompt, 'Enter');
    expect(await replyDone(p)).toBe('done');
    const first = srv!.engine.submitted[0]!;
    expect(first.sampling).toMatchObject({ temperature: 0.3, topP: 0.9, maxTokens: 20 });
    expect(first.prompt).toMatchObject({ messages: [{ role: 'system', content: 'Be brief. 请简短回答。' }, { role: 'user', content: 'first' }] });

    await p.click('#new-chat');
    expect(await p.locator('.msg').count()).toBe(0);
    await p.fill('#system-prompt', '');
    await p.fill('#p-temperature', '1.2');
    await p.press('#p-temperature', 'Tab');
    await p.fill(sel.prompt, 'second');
    await p.press(sel.prompt, 'Enter');
    expect(await replyDone(p)).toBe('done');
    const second = srv!.engine.submitted[1]!;
    expect(second.sampling).toMatchObject({ temperature: 1.2, topP: 0.9, maxTokens: 20 });
    expect(second.prompt).toMatchObject({ messages: [{ role: 'user', content: 'second' }] });
    expect(await p.locator('.conv-open').allTextContents()).toEqual(['second', 'first']);

    await p.click('.conv-open >> text=first');
    expect(await p.inputValue('#p-temperature')).toBe('0.3');
    expect(await p.inputValue('#system-prompt')).toBe('Be brief. 请简短回答。');
    await p.click('.conv.active .conv-rename');
    await p.fill('.conv-title-input', '诗歌 Poems');
    await p.press('.conv-title-input', 'Enter');
    expect(await p.locator('.conv-open').allTextContents()).toEqual(['second', '诗歌 Poems']);

    await p.reload();
    await expect.poll(() => p.locator('.conv-open').allTextContents()).toEqual(['second', '诗歌 Poems']);
    expect(await p.textContent('.conv.active .conv-open')).toBe('诗歌 Poems');
    expect(await p.textContent('.msg.user .md')).toBe('first');
    expect(await p.inputValue('#p-top-p')).toBe('0.9');
    p.once('dialog', (d) => void d.accept());
    await p.click('.conv:has-text("second") .conv-delete');
    expect(await p.locator('.conv-open').allTextContents()).toEqual(['诗歌 Poems']);
    await p.reload();
    await expect.poll(() => p.locator('.conv-open').allTextContents()).toEqual(['诗歌 Poems']);
  });

  it('attached text files show their size in tokens and are sent inside the prompt', async () => {
    const p = await open(await startServer());
    await p.setInputFiles('#file-input', [
      { name: 'notes.md', mimeType: 'text/markdown', buffer: Buffer.from('hello 你好') },
      { name: 'data.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2') },
    ]);
    // The fake tokenizer has one token per code point.
    await expect.poll(() => p.locator('#attachments .chip-tokens').allTextContents()).toEqual(['8 tokens', '7 tokens']);
    await p.click('#attachments .chip:has-text("data.csv") .chip-x');
    await p.fill(sel.prompt, 'summarize');
    await p.press(sel.prompt, 'Enter');
    expect(await replyDone(p)).toBe('done');
    expect(srv!.engine.submitted[0]!.prompt).toMatchObject({ messages: [{ role: 'user', content: 'File: notes.md\n```md\nhello 你好\n```\n\nsummarize' }] });
    expect(await p.locator('.msg.user .chip').textContent()).toBe('notes.md8 tokens');
    expect(await p.locator('#attachments').isHidden()).toBe(true);
  });
});
