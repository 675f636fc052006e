// The chat page's assets, all in memory: the HTML shell, one stylesheet and the client's ES modules
// (client.gen.ts). Each carries a content hash for ETag revalidation.

import { CLIENT_MODULES } from './client.gen.js';
import { PAGE_HTML } from './page.js';
import { BASE_CSS } from './styles-base.js';
import { CONTENT_CSS } from './styles-content.js';

export interface Asset {
  body: string;
  type: string;
  etag: string;
}

/** FNV-1a over UTF-16 code units: stable, sync and dependency-free (crypto.subtle is async). */
function etag(body: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < body.length; i++) {
    h ^= body.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `"${h.toString(16)}-${body.length.toString(16)}"`;
}

const asset = (body: string, type: string): Asset => ({ body, type, etag: etag(body) });

export const PAGE: Asset = asset(PAGE_HTML, 'text/html; charset=utf-8');

/** File name under /ui/ → asset. */
export const UI_ASSETS: ReadonlyMap<string, Asset> = new Map([
  ['app.css', asset(BASE_CSS + CONTENT_CSS, 'text/css; charset=utf-8')],
  ...Object.entries(CLIENT_MODULES).map(([name, js]): [string, Asset] => [name, asset(js, 'text/javascript; charset=utf-8')]),
]);
