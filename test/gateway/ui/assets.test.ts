// The page's routes and bundled assets, through app.request() (no browser): what is served, with which
// headers, outside auth, and that the generated client modules match their TypeScript sources.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PAGE_CSP } from '../../../src/gateway/routes/ui.js';
import { UI_ASSETS } from '../../../src/gateway/ui/assets.js';
import { GENERATED_FILE, generateClientModules } from '../../../scripts/build-ui.js';
import { setup } from '../helpers.js';

describe('chat page routes', () => {
  it('GET / is the page, with a strict CSP and an ETag; a matching If-None-Match is a 304', async () => {
    const { get } = setup();
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(PAGE_CSP);
    expect(PAGE_CSP).toContain("script-src 'self'");
    expect(PAGE_CSP).not.toContain('unsafe-inline');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const html = await res.text();
    expect(html).toContain('<script type="module" src="ui/main.js"></script>');
    expect(html).not.toMatch(/<script>|\son[a-z]+=|https?:\/\//); // no inline script, handlers or remote URLs
    const etag = res.headers.get('etag')!;
    expect((await get('/', { 'if-none-match': etag })).status).toBe(304);
  });

  it('serves every asset the page and its modules reference, with the right types', async () => {
    const { get } = setup();
    const html = await (await get('/')).text();
    const wanted = new Set([...html.matchAll(/(?:src|href)="ui\/([^"]+)"/g)].map((m) => m[1]!));
    for (const [name, a] of UI_ASSETS) {
      if (name.endsWith('.js')) for (const m of a.body.matchAll(/from "\.\/([^"]+)"/g)) wanted.add(m[1]!);
    }
    expect([...wanted].sort()).toContain('main.js');
    for (const name of wanted) {
      const res = await get(`/ui/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type')).toBe(name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    // Browser modules may import only each other: nothing from the server side, no bare specifiers.
    for (const [name, a] of UI_ASSETS) {
      for (const m of a.body.matchAll(/\bfrom\s+"([^"]+)"/g)) expect(m[1], name).toMatch(/^\.\/[a-z-]+\.js$/);
      expect(a.body, name).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/); // no CDN, no remote fonts
    }
    expect((await get('/ui/nope.js')).status).toBe(404);
    expect((await get('/ui/..%2Fapp.ts')).status).toBe(404);
  });

  it('the page stays reachable with --api-key (it asks for the key itself); chatUi: false removes it', async () => {
    const withKey = setup({ apiKey: 'k' });
    expect((await withKey.get('/')).status).toBe(200);
    expect((await withKey.get('/ui/main.js')).status).toBe(200);
    expect((await withKey.get('/v1/models')).status).toBe(401);
    const off = setup({ chatUi: false });
    expect((await off.get('/')).status).toBe(404);
    expect((await off.get('/ui/main.js')).status).toBe(404);
  });

  it('the generated client modules are up to date with src/gateway/ui/client (run `npm run build:ui`)', () => {
    expect(readFileSync(GENERATED_FILE, 'utf8')).toBe(generateClientModules());
  });
});
