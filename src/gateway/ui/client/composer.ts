// The prompt box: Enter sends, Shift+Enter is a new line (and Enter while an IME is composing is left
// to the IME, which matters for Chinese input); the send button becomes Stop while a reply streams;
// text files can be attached, each shown with its size in tokens from the server's /tokenize.

import type { Api } from './api.js';
import { byId } from './dom.js';
import type { Attachment } from './store.js';
import { fileChip } from './view.js';

/** Files larger than this are refused: they would not fit a small model's context anyway. */
export const MAX_FILE_BYTES = 512 * 1024;
export const TEXT_EXTENSIONS =
  '.txt .md .markdown .csv .tsv .json .jsonl .yaml .yml .toml .ini .xml .html .css .js .mjs .ts .tsx .jsx .py .rb .go .rs .java .kt .c .h .cc .cpp .hpp .cs .swift .php .sh .sql .r .lua .log'.split(' ');

export interface ComposerEvents {
  send(text: string, files: Attachment[]): void;
  stop(): void;
  notify(message: string): void;
}

export class Composer {
  readonly input = byId('prompt', HTMLTextAreaElement);
  private readonly button = byId('send', HTMLButtonElement);
  private readonly fileInput = byId('file-input', HTMLInputElement);
  private readonly chips = byId('attachments', HTMLElement);
  private files: Attachment[] = [];
  private readonly counting = new Set<Attachment>();
  private busy = false;

  constructor(
    private readonly api: Api,
    private readonly ev: ComposerEvents,
  ) {
    this.fileInput.accept = [...TEXT_EXTENSIONS, 'text/*'].join(',');
    // The long keyboard hint wraps to two lines on a phone (which has no Shift+Enter anyway).
    if (matchMedia('(max-width: 760px)').matches) this.input.placeholder = 'Message…';
    byId('form', HTMLFormElement).addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    byId('attach', HTMLButtonElement).addEventListener('click', () => this.fileInput.click());
    this.fileInput.addEventListener('change', () => {
      void this.attach([...(this.fileInput.files ?? [])]);
      this.fileInput.value = '';
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        if (!this.busy) this.submit();
      }
    });
    this.input.addEventListener('input', () => this.autosize());
  }

  setBusy(busy: boolean): void {
    this.busy = busy;
    this.button.textContent = busy ? 'Stop' : 'Send';
    this.button.classList.toggle('stop', busy);
    this.button.setAttribute('aria-label', busy ? 'Stop generating' : 'Send message');
  }

  focus(): void {
    this.input.focus();
  }

  private submit(): void {
    if (this.busy) return this.ev.stop();
    if (this.counting.size > 0) return this.ev.notify('Still reading the attached files…');
    const text = this.input.value.trim();
    if (!text && this.files.length === 0) return;
    this.ev.send(text, this.files);
    this.input.value = '';
    this.files = [];
    this.renderChips();
    this.autosize();
  }

  private async attach(list: File[]): Promise<void> {
    for (const file of list) {
      if (file.size > MAX_FILE_BYTES) {
        this.ev.notify(`${file.name} is larger than ${MAX_FILE_BYTES / 1024} KiB; attach a smaller text file.`);
        continue;
      }
      const text = await file.text();
      if (text.includes('\u0000')) {
        this.ev.notify(`${file.name} does not look like a text file.`);
        continue;
      }
      const att: Attachment = { name: file.name, text, tokens: null };
      this.files.push(att);
      this.counting.add(att);
      this.renderChips();
      try {
        att.tokens = await this.api.countTokens(text);
      } catch (err) {
        this.ev.notify(`Could not count tokens of ${file.name}: ${(err as Error).message}`);
      } finally {
        this.counting.delete(att);
        this.renderChips();
      }
    }
  }

  private renderChips(): void {
    this.chips.replaceChildren(
      ...this.files.map((f) =>
        fileChip(
          f,
          () => {
            this.files = this.files.filter((x) => x !== f);
            this.renderChips();
          },
          this.counting.has(f),
        ),
      ),
    );
    this.chips.hidden = this.files.length === 0;
  }

  private autosize(): void {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
  }
}
