// GET / (the chat page) and GET /ui/:file (its stylesheet and script modules), served from memory.
// The page is same-origin with the API it calls, so it needs no CORS; it gets a strict CSP (scripts and
// styles from this origin only, no inline script, no plugins, no framing) as a second line of defence
// behind the escape-first Markdown renderer. Assets revalidate by ETag (cache-control: no-cache), so a
// new deployment is picked up at once.

import type { AppContext } from '../deps.js';
import { ApiError } from '../errors.js';
import { PAGE, UI_ASSETS, type Asset } from '../ui/assets.js';

export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function serve(c: AppContext, a: Asset, extra: Record<string, string> = {}): Response {
  const headers = { etag: a.etag, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', ...extra };
  if (c.req.header('if-none-match') === a.etag) return c.body(null, 304, headers);
  return c.body(a.body, 200, { 'content-type': a.type, ...headers });
}

export function uiPageHandler() {
  return (c: AppContext) => serve(c, PAGE, { 'content-security-policy': PAGE_CSP, 'x-frame-options': 'DENY' });
}

export function uiAssetHandler() {
  return (c: AppContext) => {
    const a = UI_ASSETS.get(c.req.param('file') ?? '');
    if (!a) throw new ApiError(404, 'Not found: no such UI asset.', 'not_found');
    return serve(c, a);
  };
}
