// The chat page in a real browser, the hostile and awkward cases: model output carrying HTML/script,
// a phone-width viewport, an API key, dark/light themes, readiness, keyboard focus.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { PAGE_CSP } from '../../../src/gateway/routes/ui.js';
import { HAVE_CHROMIUM, CHROMIUM, RICH_REPLY, SHOTS, launchBrowser, replyDone, sel, settled, startServer, watchErrors, type Browser, type TestServer } from './harness.js';

const MODEL = 'baidu/ERNIE-4.5-0.3B-PT';
if (!HAVE_CHROMIUM) console.warn(`chat page browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

const HOSTILE =
  'Look: <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script> ' +
  '<iframe src="javascript:window.__xss=3"></iframe> [click me](javascript:window.__xss=4) ' +
  '<a href="javascript:window.__xss=5">a</a> &lt;b&gt; **bold** `<b>code</b>`\n\n```html\n<svg onload="window.__xss=6">\n```';

const WIDE =
  'averyveryveryverylongwordwithoutanyspaces'.repeat(5) + ' https://example.com/' + 'path/'.repeat(40) + '\n\n' +
  '```\n' + 'const x = "' + 'x'.repeat(300) + '";\n```\n\n| a | b |\n|---|---|\n| ' + 'cell'.repeat(60) + ' | y |\n\n' +
  '中文长句子测试，'.repeat(30);

describe.skipIf(!HAVE_CHROMIUM)('chat page safety and layout (Chromium)', () => {
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
  });

  async function open(s: TestServer, waitModel = true): Promise<Page> {
    srv = s;
    page = await browser.context.newPage();
    errors = watchErrors(page);
    await page.goto(s.url);
    if (waitModel) await expect.poll(() => page!.textContent('#model-name')).toBe(MODEL);
    return page;
  }
  async function ask(p: Page, text: string): Promise<string> {
    await p.fill(sel.prompt, text);
    await p.press(sel.prompt, 'Enter');
    return replyDone(p);
  }

  it('a reply carrying <img onerror>, <script>, <iframe> and javascript: links renders as inert text', async () => {
    const p = await open(await startServer({}, { corpus: HOSTILE, fixedStart: 0 }));
    expect(await ask(p, 'user html too: <img src=x onerror="window.__xss=7">')).toBe('done');
    const messages = p.locator('#messages');
    expect(await messages.locator('img, script, iframe, svg:not(.icon), [onerror], [onload]').count()).toBe(0);
    expect(await messages.locator('.md a').count()).toBe(0); // no http(s) link in the reply
    expect(await p.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    const text = await p.locator(sel.replyBody).textContent();
    expect(text).toContain('<img src=x onerror="window.__xss=1">');
    expect(text).toContain('<script>window.__xss=2</script>');
    expect(text).toContain('[click me](javascript:window.__xss=4)');
    expect(text).toContain('&lt;b&gt;');
    expect(await p.locator(`${sel.replyBody} strong`).textContent()).toBe('bold'); // Markdown still works
    expect(await p.locator(`${sel.replyBody} pre code`).textContent()).toBe('<svg onload="window.__xss=6">');
    expect(await p.locator('.msg.user .md').textContent()).toBe('user html too: <img src=x onerror="window.__xss=7">');
    await p.reload(); // stored history is rendered through the same path
    await expect.poll(() => p.locator('.msg').count()).toBe(2);
    expect(await messages.locator('img, script, iframe, [onerror]').count()).toBe(0);
    expect(errors).toEqual([]);
    const res = await fetch(srv!.url);
    expect(res.headers.get('content-security-policy')).toBe(PAGE_CSP);
  });

  it('phone width (375px): no horizontal scroll, even with long words, URLs, code and tables; drawer sidebar', async () => {
    const p = await open(await startServer({}, { corpus: WIDE, fixedStart: 0 }));
    await p.setViewportSize({ width: 375, height: 740 });
    expect(await ask(p, '请给我一个很长的回答 with a long prompt that wraps onto several lines on a phone')).toBe('done');
    const overflow = () =>
      p.evaluate(() => {
        const d = document.documentElement;
        const m = document.getElementById('messages')!;
        return { page: d.scrollWidth - d.clientWidth, body: document.body.scrollWidth - document.body.clientWidth, messages: m.scrollWidth - m.clientWidth };
      });
    expect(await overflow()).toEqual({ page: 0, body: 0, messages: 0 });
    const sidebarX = async () => {
      await settled(p, '#sidebar'); // the drawer slides (a CSS transition) on resize and on toggle
      return (await p.locator('#sidebar').boundingBox())!.x;
    };
    expect((await sidebarX()) + 300).toBeLessThanOrEqual(0); // off-canvas
    await p.screenshot({ path: join(SHOTS, 'phone.png') });
    await p.click('#toggle-settings');
    expect(await overflow()).toEqual({ page: 0, body: 0, messages: 0 });
    await p.click('#toggle-settings');
    await p.click('#toggle-sidebar');
    expect(await sidebarX()).toBe(0);
    await p.screenshot({ path: join(SHOTS, 'phone-sidebar.png') });
    expect(await overflow()).toEqual({ page: 0, body: 0, messages: 0 });
    await p.mouse.click(360, 400); // the scrim closes the drawer
    expect(await sidebarX()).toBeLessThan(-200);
    expect(errors).toEqual([]);
  });

  it('with --api-key: asks for the key once, rejects a wrong one, keeps the right one across reloads', async () => {
    const p = await open(await startServer({ apiKey: 'sk-test-key' }), false);
    await p.locator('#key-dialog[open]').waitFor();
    expect(await p.textContent('#model-name')).toBe('API key required');
    await p.screenshot({ path: join(SHOTS, 'api-key.png') });
    await p.fill('#key-input', 'sk-wrong');
    await p.press('#key-input', 'Enter');
    await expect.poll(() => p.textContent('#key-error')).toBe('Incorrect API key provided.');
    expect(await p.locator('#key-dialog').getAttribute('open')).not.toBeNull();
    await p.keyboard.press('Escape'); // cannot be dismissed: nothing works without the key
    expect(await p.locator('#key-dialog').getAttribute('open')).not.toBeNull();
    await p.fill('#key-input', 'sk-test-key');
    await p.press('#key-input', 'Enter');
    await expect.poll(() => p.textContent('#model-name')).toBe(MODEL);
    expect(await p.locator('#key-dialog').getAttribute('open')).toBeNull();
    expect(await p.evaluate(() => localStorage.getItem('ernie-edge.apiKey'))).toBe('sk-test-key');
    expect(await ask(p, 'hi')).toBe('done');
    expect(srv!.engine.submitted).toHaveLength(1);
    await p.reload();
    await expect.poll(() => p.textContent('#model-name')).toBe(MODEL);
    expect(await p.locator('#key-dialog').getAttribute('open')).toBeNull();
    expect(errors.filter((e) => !e.includes('401'))).toEqual([]); // the browser logs the expected 401s
  });

  it('dark and light themes (system preference, then a remembered toggle); visible keyboard focus', async () => {
    const p = await open(await startServer({}, { corpus: RICH_REPLY, fixedStart: 0 }));
    expect(await ask(p, '写一首关于春天的诗，并介绍 ERNIE')).toBe('done');
    const bg = () => p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(await bg()).toBe('rgb(255, 255, 255)');
    await p.emulateMedia({ colorScheme: 'dark' });
    expect(await bg()).toBe('rgb(17, 19, 24)');
    await p.screenshot({ path: join(SHOTS, 'desktop-dark.png') });
    await p.click('#toggle-theme');
    expect(await bg()).toBe('rgb(255, 255, 255)');
    await p.reload();
    await expect.poll(() => p.textContent('#model-name')).toBe(MODEL);
    expect(await bg()).toBe('rgb(255, 255, 255)'); // the toggle wins over the system preference
    await p.emulateMedia({ colorScheme: 'light' });

    await p.focus(sel.prompt);
    await p.keyboard.press('Tab');
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('send');
    expect(await p.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    expect(errors).toEqual([]);
  });

  it('the header shows readiness from /ready and follows it', async () => {
    const p = await open(await startServer({}, { ready: false }), false);
    await expect.poll(() => p.getAttribute('#status-dot', 'data-state')).toBe('loading');
    expect(await p.textContent('#status-text')).toBe('loading');
    srv!.engine.setReady(true);
    await expect.poll(() => p.getAttribute('#status-dot', 'data-state'), { timeout: 8000, interval: 200 }).toBe('ready');
    expect(await p.textContent('#model-name')).toBe(MODEL);
  });
});
