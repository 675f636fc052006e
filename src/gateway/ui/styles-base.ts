// Page CSS, part 1: theme variables, typography, layout (sidebar, header, settings, composer).
// Themes: light by default, dark from prefers-color-scheme unless the toggle chose one
// (html[data-theme]). Fonts are system stacks only (no web fonts: nothing is fetched from elsewhere);
// CJK faces are listed for each platform so Chinese text gets a proper Hei/Sans face, not a fallback.
// Narrow screens (≤ 760px): the sidebar becomes a drawer; nothing may scroll horizontally at 375px.

const LIGHT = `--bg:#ffffff;--bg-soft:#f6f7f9;--panel:#f2f4f7;--text:#1d2129;--muted:#6b7280;--border:#e2e5ea;
--accent:#3656e5;--accent-text:#ffffff;--user-bg:#edf1ff;--code-bg:#f5f7fa;--code-head:#e9edf2;--danger:#c62828;--ok:#1e8e3e;--warn:#c77700;
--shadow:0 8px 30px rgba(15,23,42,.12);`;
const DARK = `--bg:#111318;--bg-soft:#16191f;--panel:#1c2028;--text:#e7e9ee;--muted:#9aa2af;--border:#2a2f3a;
--accent:#7d95ff;--accent-text:#0d1020;--user-bg:#232a44;--code-bg:#0c0e13;--code-head:#1a1e27;--danger:#ff6b6b;--ok:#4cc274;--warn:#f0b429;
--shadow:0 8px 30px rgba(0,0,0,.5);`;

export const BASE_CSS = `
:root{${LIGHT}color-scheme:light;
--font-sans:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"PingFang SC","Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC","Source Han Sans SC","WenQuanYi Micro Hei",sans-serif;
--font-mono:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono","Noto Sans Mono CJK SC","WenQuanYi Micro Hei Mono",monospace}
@media (prefers-color-scheme:dark){:root:not([data-theme=light]){${DARK}color-scheme:dark}}
:root[data-theme=dark]{${DARK}color-scheme:dark}
*,*::before,*::after{box-sizing:border-box}
html,body{height:100%;margin:0}
body{font-family:var(--font-sans);font-size:15px;line-height:1.6;background:var(--bg);color:var(--text);
-webkit-text-size-adjust:100%;text-rendering:optimizeLegibility;-webkit-font-smoothing:antialiased}
button,input,textarea{font:inherit;color:inherit}
:focus-visible{outline:2px solid var(--accent);outline-offset:2px;border-radius:6px}
.visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
[hidden]{display:none!important}
.icon{width:18px;height:18px;fill:none;stroke:currentColor;stroke-width:1.8;stroke-linecap:round;stroke-linejoin:round;flex:none}

.btn{display:inline-flex;align-items:center;justify-content:center;gap:6px;min-height:36px;padding:0 14px;border-radius:10px;
border:1px solid var(--border);background:var(--bg);cursor:pointer;font-weight:500;white-space:nowrap}
.btn:hover{border-color:var(--muted)}
.btn.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}
.btn.primary:hover{filter:brightness(1.08)}
.btn.stop{background:var(--text);border-color:var(--text);color:var(--bg)}
.icon-btn{display:inline-flex;align-items:center;justify-content:center;width:36px;height:36px;flex:none;border:0;border-radius:10px;
background:transparent;color:var(--muted);cursor:pointer}
.icon-btn:hover{background:var(--panel);color:var(--text)}
.icon-btn:disabled{opacity:.35;cursor:default}

.app{display:grid;grid-template-columns:272px minmax(0,1fr);height:100vh;height:100dvh}
.sidebar{display:flex;flex-direction:column;min-height:0;background:var(--bg-soft);border-right:1px solid var(--border)}
.sidebar-head{display:flex;flex-direction:column;gap:12px;padding:16px 12px 8px}
.brand{font-weight:700;font-size:17px;letter-spacing:.02em;padding:0 4px}
.sidebar nav{flex:1;overflow-y:auto;padding:4px 8px 16px}
.conv-list{list-style:none;margin:0;padding:0}
.conv{display:flex;align-items:center;gap:2px;border-radius:10px;margin:2px 0}
.conv:hover,.conv.active{background:var(--panel)}
.conv.active .conv-open{font-weight:600}
.conv-open{flex:1;min-width:0;text-align:left;border:0;background:transparent;padding:8px 10px;cursor:pointer;
overflow:hidden;text-overflow:ellipsis;white-space:nowrap;border-radius:10px}
.conv .icon-btn{width:30px;height:30px;opacity:0}
.conv:hover .icon-btn,.conv.active .icon-btn,.conv:focus-within .icon-btn{opacity:1}
.conv-title-input{flex:1;min-width:0;padding:7px 10px;border:1px solid var(--accent);border-radius:8px;background:var(--bg)}
.scrim{display:none}
.only-narrow{display:none}

.main{display:flex;flex-direction:column;min-width:0;min-height:0;position:relative}
.topbar{display:flex;align-items:center;gap:6px;padding:8px 12px;border-bottom:1px solid var(--border);min-height:54px}
.model{flex:1;min-width:0;display:flex;align-items:center;gap:8px}
.model-name{font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.model-org{color:var(--muted);font-weight:400}
.status-text{color:var(--muted);font-size:13px;white-space:nowrap}
.dot{width:9px;height:9px;border-radius:50%;background:var(--muted);flex:none}
.dot[data-state=ready]{background:var(--ok);box-shadow:0 0 0 3px color-mix(in srgb,var(--ok) 22%,transparent)}
.dot[data-state=loading]{background:var(--warn)}
.dot[data-state=down]{background:var(--danger)}

.settings{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:10px 14px;padding:14px 16px;border-bottom:1px solid var(--border);background:var(--bg-soft)}
.field{display:flex;flex-direction:column;gap:4px;font-size:13px;color:var(--muted);min-width:0}
.field.wide,.settings-note{grid-column:1/-1}
.field input,.field textarea{width:100%;padding:8px 10px;border:1px solid var(--border);border-radius:8px;background:var(--bg);color:var(--text);font-size:14px}
.field textarea{resize:vertical;line-height:1.6}
.settings-note{margin:0;font-size:12px;color:var(--muted)}

.composer{padding:10px 16px calc(12px + env(safe-area-inset-bottom));background:var(--bg)}
.composer-row{max-width:820px;margin:0 auto;display:flex;align-items:flex-end;gap:6px;padding:6px;border:1px solid var(--border);
border-radius:18px;background:var(--panel)}
.composer-row:focus-within{border-color:var(--accent)}
#prompt{flex:1;min-width:0;resize:none;border:0;background:transparent;padding:7px 6px;font-size:16px;line-height:1.5;max-height:240px;outline:none}
.send{border-radius:12px}
.attachments{max-width:820px;margin:0 auto 8px;display:flex;flex-wrap:wrap;gap:6px}
.toast{position:absolute;left:50%;bottom:96px;transform:translateX(-50%);max-width:min(560px,calc(100% - 32px));padding:10px 14px;
border-radius:10px;background:var(--text);color:var(--bg);box-shadow:var(--shadow);font-size:14px;z-index:5}

@media (max-width:760px){
.app{grid-template-columns:minmax(0,1fr)}
.sidebar{position:fixed;inset:0 auto 0 0;width:min(84vw,300px);z-index:30;transform:translateX(-105%);transition:transform .2s ease;box-shadow:var(--shadow)}
.app.sidebar-open .sidebar{transform:none}
.app.sidebar-open .scrim{display:block;position:fixed;inset:0;background:rgba(0,0,0,.35);z-index:20}
.only-narrow{display:inline-flex}
.model-org{display:none}
.settings{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
.composer{padding-left:8px;padding-right:8px}
.conv .icon-btn{opacity:1}
}
@media (prefers-reduced-motion:reduce){*{transition:none!important;animation:none!important}}
`;
