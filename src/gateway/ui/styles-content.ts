// Page CSS, part 2: messages, rendered Markdown (CJK-friendly line height and spacing), code blocks,
// tables, attachment chips, the key dialog. Long words, URLs and code never widen the page: text wraps
// anywhere as a last resort and code/tables scroll inside their own box.

export const CONTENT_CSS = `
.messages{flex:1;overflow-y:auto;overflow-x:hidden;padding:24px 16px 8px;scroll-behavior:smooth}
.msg{max-width:820px;margin:0 auto 22px;display:flex;flex-direction:column}
.msg.user{align-items:flex-end}
.msg.user .bubble{background:var(--user-bg);border-radius:18px 18px 4px 18px;padding:10px 16px;max-width:min(86%,680px)}
.msg.assistant .bubble{padding:0 2px}
.bubble{min-width:0;max-width:100%}
.msg-error{color:var(--danger);margin:6px 0 0;font-size:14px}
.meta{display:flex;align-items:center;gap:8px;min-height:30px;color:var(--muted);font-size:12.5px;flex-wrap:wrap}
.msg.user .meta{justify-content:flex-end}
.msg.editing .meta{display:none}
.stats{font-variant-numeric:tabular-nums}
.tools{display:inline-flex;gap:2px}
.tools .icon-btn{width:30px;height:30px}
.tools .icon-btn .icon{width:16px;height:16px}
[data-done=copied]{color:var(--ok)!important}
[data-done=failed]{color:var(--danger)!important}
.editor{width:100%;max-width:680px}
.edit-area{width:100%;min-height:90px;padding:10px 12px;border:1px solid var(--accent);border-radius:12px;background:var(--bg);resize:vertical;line-height:1.6}
.editor-row{display:flex;justify-content:flex-end;gap:8px;margin-top:8px}

.md{line-height:1.8;overflow-wrap:anywhere;line-break:strict;text-autospace:normal;text-spacing-trim:space-first;font-size:15.5px}
.md>:first-child{margin-top:0}.md>:last-child{margin-bottom:0}
.md p{margin:.55em 0}
.md h1,.md h2,.md h3,.md h4,.md h5,.md h6{line-height:1.4;margin:1.1em 0 .5em;font-weight:650}
.md h1{font-size:1.45em}.md h2{font-size:1.3em}.md h3{font-size:1.15em}.md h4,.md h5,.md h6{font-size:1em}
.md ul,.md ol{margin:.5em 0;padding-left:1.6em}
.md li{margin:.2em 0}
.md blockquote{margin:.7em 0;padding:.1em 1em;border-left:3px solid var(--border);color:var(--muted)}
.md hr{border:0;border-top:1px solid var(--border);margin:1.2em 0}
.md a{color:var(--accent);text-decoration:underline;text-underline-offset:2px}
.md strong{font-weight:650}
.md code{font-family:var(--font-mono);font-size:.88em;background:var(--code-bg);border:1px solid var(--border);border-radius:5px;padding:.05em .35em}
.code{margin:.8em 0;border:1px solid var(--border);border-radius:10px;overflow:hidden;background:var(--code-bg)}
.code-head{display:flex;align-items:center;justify-content:space-between;padding:2px 6px 2px 12px;background:var(--code-head);font-size:12px;color:var(--muted)}
.code-lang{font-family:var(--font-mono)}
.code-copy{border:0;background:transparent;color:var(--muted);cursor:pointer;padding:4px 8px;border-radius:6px;font-size:12px}
.code-copy:hover{color:var(--text);background:var(--panel)}
.code pre{margin:0;padding:12px 14px;overflow-x:auto;line-height:1.55}
.code pre code{border:0;padding:0;background:none;font-size:13.5px;white-space:pre;overflow-wrap:normal}
.table-wrap{overflow-x:auto;margin:.8em 0}
.md table{border-collapse:collapse;font-size:.95em}
.md th,.md td{border:1px solid var(--border);padding:6px 10px;text-align:left;vertical-align:top}
.md th{background:var(--bg-soft);font-weight:600}
.md .c{text-align:center}.md .r{text-align:right}
/* The streaming caret sits at the end of the last paragraph/heading/list item, else on its own line. */
.msg.assistant[data-state=streaming] .md:is(:empty,:not(:has(>:is(p,h1,h2,h3,h4,h5,h6,ul,ol):last-child)))::after,
.msg.assistant[data-state=streaming] .md>:is(p,h1,h2,h3,h4,h5,h6):last-child::after,
.msg.assistant[data-state=streaming] .md>:is(ul,ol):last-child>li:last-child::after{content:"";display:inline-block;width:.55em;height:1.1em;margin-left:2px;vertical-align:-.2em;
background:var(--accent);border-radius:2px;animation:blink 1s steps(1) infinite}
@keyframes blink{50%{opacity:0}}

.files{display:flex;flex-wrap:wrap;gap:6px;margin-bottom:6px}
.chip{display:inline-flex;align-items:center;gap:6px;max-width:100%;padding:4px 4px 4px 10px;border:1px solid var(--border);border-radius:999px;
background:var(--bg);font-size:13px}
.chip-name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;min-width:0;font-weight:500}
.chip-tokens{color:var(--muted);white-space:nowrap;padding-right:6px}
.chip-x{width:24px;height:24px}
.chip-x .icon{width:14px;height:14px}

.empty{max-width:620px;margin:12vh auto 0;text-align:center;color:var(--muted);padding:0 12px}
.empty h1{color:var(--text);font-size:26px;margin:0 0 8px;font-weight:650;overflow-wrap:anywhere}
.empty .hint{font-size:13px}

dialog{border:1px solid var(--border);border-radius:14px;padding:22px;background:var(--bg);color:var(--text);width:min(420px,calc(100vw - 32px));box-shadow:var(--shadow)}
dialog::backdrop{background:rgba(0,0,0,.45)}
dialog h2{margin:0 0 8px;font-size:18px}
dialog p{color:var(--muted);font-size:14px}
#key-input{width:100%;padding:10px 12px;border:1px solid var(--border);border-radius:10px;background:var(--bg-soft)}
@media (max-width:760px){.messages{padding:16px 12px 8px}.msg.user .bubble{max-width:92%}}
`;
