// --chat-template FILE|TEMPLATE, read as vLLM reads it: an existing file's text; otherwise the argument
// itself when it looks like a template (it has Jinja's braces or a newline); otherwise a mistyped path.

import { readFile, stat } from 'node:fs/promises';

export async function readChatTemplateArg(arg: string): Promise<string> {
  const isFile = await stat(arg).then(
    (s) => s.isFile(),
    () => false,
  );
  if (isFile) return readFile(arg, 'utf8');
  if (/[{}\n]/.test(arg)) return arg;
  throw new Error(`--chat-template ${arg}: no such file, and not a template (no {{ }} or {% %} in it)`);
}
