// The tool-calling and chat-template flags: parsed into the gateway's and sidecar's configuration,
// forwarded to the right half, and --chat-template read as a file or as the template itself.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { forwardFlags, parseArgs, UsageError } from '../../src/cli/args.js';
import { buildConfig } from '../../src/cli/config.js';
import { readChatTemplateArg } from '../../src/sidecar/tokenizer/template-arg.js';

const cfg = (argv: string[]) => buildConfig(parseArgs(argv, {}));

describe('tool-calling flags', () => {
  it('default: hermes, auto off, no template override, request templates refused', () => {
    const c = cfg(['serve']);
    expect([c.gateway.toolCallParser, c.gateway.enableAutoToolChoice]).toEqual(['hermes', false]);
    expect([c.sidecar.chatTemplate, c.sidecar.trustRequestChatTemplate]).toEqual([undefined, false]);
  });

  it('parsed and forwarded to the half that reads them', () => {
    const argv = ['serve', '--tool-call-parser', 'hermes', '--enable-auto-tool-choice', '--chat-template', '/t.jinja', '--trust-request-chat-template'];
    const c = cfg(argv);
    expect([c.gateway.toolCallParser, c.gateway.enableAutoToolChoice]).toEqual(['hermes', true]);
    expect([c.sidecar.chatTemplate, c.sidecar.trustRequestChatTemplate]).toEqual(['/t.jinja', true]);
    const flags = parseArgs(argv, {}).flags;
    expect(forwardFlags(flags, 'engine').sort()).toEqual(['--chat-template=/t.jinja', '--trust-request-chat-template']);
    expect(forwardFlags(flags, 'gateway').sort()).toEqual(['--enable-auto-tool-choice', '--tool-call-parser=hermes']);
  });

  it('an unknown parser is a usage error naming the known ones', () => {
    expect(() => cfg(['serve', '--tool-call-parser', 'mistral'])).toThrow(UsageError);
    expect(() => cfg(['serve', '--tool-call-parser', 'mistral'])).toThrow(/one of hermes/);
  });

  it('--chat-template: a file, the template itself, or an error for a mistyped path', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'tmpl-')), 't.jinja');
    writeFileSync(file, '{{ messages[0].content }}');
    expect(await readChatTemplateArg(file)).toBe('{{ messages[0].content }}');
    expect(await readChatTemplateArg('{% for m in messages %}{{ m.content }}{% endfor %}')).toBe('{% for m in messages %}{{ m.content }}{% endfor %}');
    await expect(readChatTemplateArg('/no/such/template.jinja')).rejects.toThrow(/no such file/);
  });
});
