// Browser-test harness: the real gateway app over the fake engine on an ephemeral loopback port, and
// Debian's Chromium driven by playwright-core with a fresh profile. Each test gets its own server (a
// new port is a new origin, so localStorage starts empty) and shares one browser.

import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createApp, type AppHandle, type CreateAppOptions } from '../../../src/gateway/app.js';
import { FakeEngineClient, type FakeEngineClientOptions } from '../../doubles/fake-engine-client.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
export const SHOTS = join(process.cwd(), 'test-results', 'ui');

export interface TestServer {
  url: string;
  engine: FakeEngineClient;
  handle: AppHandle;
  /** Prometheus text from /metrics. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

export async function startServer(app: Partial<CreateAppOptions> = {}, engineOpts: FakeEngineClientOptions = {}): Promise<TestServer> {
  const engine = new FakeEngineClient(engineOpts);
  const handle = createApp({ engine, ...app });
  let server!: ReturnType<typeof serve>;
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: handle.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port));
  });
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    engine,
    handle,
    metrics: async () => (await fetch(new URL('metrics', url))).text(),
    close: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One sample's value from Prometheus text, e.g. metric(text, 'vllm:num_requests_running'). */
export function metric(text: string, name: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : null;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'ernie-edge-ui-'));
  mkdirSync(SHOTS, { recursive: true });
  // NOTE: playwright refuses --user-data-dir in args; launchPersistentContext is how it takes one.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Fails the test on any uncaught page error or console error (a CSP violation logs one). */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

export const sel = {
  prompt: '#prompt',
  send: '#send',
  reply: '.msg.assistant >> nth=-1',
  replyBody: '.msg.assistant >> nth=-1 >> .md',
};

/** Resolves when the last reply has finished streaming; returns its state. */
export async function replyDone(page: Page, timeout = 20_000): Promise<string> {
  const reply = page.locator(sel.reply);
  await reply.waitFor();
  await page.waitForFunction(() => [...document.querySelectorAll('.msg.assistant')].pop()?.getAttribute('data-state') !== 'streaming', null, { timeout });
  return (await reply.getAttribute('data-state')) ?? '';
}

/**
 * Records the last reply's text length after every DOM change under #messages until it stops
 * streaming; returns the distinct lengths in order. A MutationObserver sees each render the page
 * makes, however fast or slow the machine, where sampling on a timer could skip some.
 */
export function recordLengths(page: Page): Promise<number[]> {
  return page.evaluate(
    () =>
      new Promise<number[]>((resolve) => {
        const seen: number[] = [];
        const observer = new MutationObserver(() => {
          const el = [...document.querySelectorAll('.msg.assistant')].pop();
          if (!el) return;
          const len = el.querySelector('.md')?.textContent?.length ?? 0;
          if (seen[seen.length - 1] !== len) seen.push(len);
          if (el.getAttribute('data-state') !== 'streaming') {
            observer.disconnect();
            resolve(seen);
          }
        });
        observer.observe(document.getElementById('messages')!, { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ['data-state'] });
      }),
  );
}

/**
 * Resolves once `selector`'s element and its subtree have no finite CSS transition or animation
 * left running (infinite ones, such as the streaming cursor's blink, are not waited for), so a
 * position read next is where the page comes to rest. getAnimations() flushes pending style first,
 * so a transition that a viewport change or a class toggle has just started is among them.
 */
export async function settled(page: Page, selector: string): Promise<void> {
  await page.locator(selector).evaluate(async (el) => {
    // Bounded: a transition that keeps restarting itself is a bug to report, not to wait out.
    for (let round = 0; round < 20; round++) {
      const running = el.getAnimations({ subtree: true }).filter((a) => a.effect?.getComputedTiming().endTime !== Infinity);
      if (running.length === 0) return;
      await Promise.allSettled(running.map((a) => a.finished));
    }
    throw new Error('animations kept starting after 20 rounds of waiting for them to finish');
  });
}

/**
 * Counts DOM changes to `selector`'s element over the page's next `frames` animation frames. For
 * asserting that something has stopped changing: the window is measured in the page's own frames,
 * so a slow or loaded machine stretches it along with everything else the page does.
 */
export function changesOver(page: Page, selector: string, frames: number): Promise<number> {
  return page.locator(selector).evaluate(
    (el, n) =>
      new Promise<number>((resolve) => {
        let changes = 0;
        const observer = new MutationObserver((records) => (changes += records.length));
        observer.observe(el, { childList: true, subtree: true, characterData: true });
        let left = n;
        const tick = () => {
          if (--left > 0) return void requestAnimationFrame(tick);
          observer.disconnect();
          resolve(changes + observer.takeRecords().length);
        };
        requestAnimationFrame(tick);
      }),
    frames,
  );
}

/** A Markdown-rich mixed Chinese/English reply (used with fixedStart: 0, so it is the whole reply). */
export const RICH_REPLY =
  '## 春晓 · 孟浩然\n\n春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。\n\n' +
  '这首诗描绘了**春天早晨**的景象。ERNIE 4.5 is an *open* model family（文心大模型）with:\n\n' +
  '1. 知识增强 knowledge-enhanced pre-training\n2. 支持 `128K` context\n3. 高效推理 fast inference\n\n' +
  '```python\ndef greet(name: str) -> str:\n    return f"你好，{name}！"\n```\n\n' +
  '> 好雨知时节，当春乃发生。\n\n| 模型 Model | 参数 Params |\n|---|---:|\n| ERNIE-4.5-0.3B | 0.36B |\n| ERNIE-4.5-21B-A3B | 21B |\n\n' +
  '详情见 https://github.com/PaddlePaddle/ERNIE 。';
