// The header's model name and readiness dot (polling /v1/models and /ready), the API-key dialog and
// the theme toggle.
// Contract: a 401 from the API opens the key dialog once (it stays open until a key works); the key is
// kept in localStorage and sent as `Authorization: Bearer`. /ready is polled every POLL_MS while the
// page is visible; the model is asked for at start and again whenever readiness changes.

import { ApiError, type Api } from './api.js';
import { byId, h } from './dom.js';

export const POLL_MS = 5000;
const THEME_KEY = 'ernie-edge.theme';

export class Header {
  modelId: string | null = null;
  private readonly name = byId('model-name', HTMLElement);
  private readonly dot = byId('status-dot', HTMLElement);
  private readonly status = byId('status-text', HTMLElement);
  private readonly dialog = byId('key-dialog', HTMLDialogElement);
  private readonly keyInput = byId('key-input', HTMLInputElement);
  private readonly keyError = byId('key-error', HTMLElement);
  private lastReady: boolean | null = null;

  constructor(
    private readonly api: Api,
    private readonly onModel: () => void,
  ) {
    byId('key-form', HTMLFormElement).addEventListener('submit', (e) => {
      e.preventDefault();
      void this.tryKey(this.keyInput.value.trim());
    });
    // Nothing works without the key, so Escape does not dismiss the dialog.
    this.dialog.addEventListener('cancel', (e) => e.preventDefault());
  }

  start(): void {
    void this.refreshModel();
    const tick = async () => {
      if (document.visibilityState === 'visible') await this.poll();
      setTimeout(() => void tick(), POLL_MS);
    };
    void tick();
  }

  /** Opens the key dialog (or, when open, shows why the last key failed). */
  askKey(error?: string): void {
    this.keyError.textContent = error ?? '';
    this.keyError.hidden = !error;
    if (!this.dialog.open) {
      this.keyInput.value = '';
      this.dialog.showModal();
    }
    this.keyInput.focus();
  }

  private async tryKey(key: string): Promise<void> {
    if (!key) return;
    this.api.setKey(key);
    if (await this.refreshModel()) this.dialog.close();
  }

  /** true when the model could be read. */
  private async refreshModel(): Promise<boolean> {
    try {
      const card = await this.api.model();
      this.modelId = card.id;
      // `org/name`: the org part is dimmed, and dropped on phones where the header is narrow.
      const cut = card.id.lastIndexOf('/') + 1;
      this.name.replaceChildren(h('span', { class: 'model-org' }, card.id.slice(0, cut)), card.id.slice(cut));
      this.name.title = card.maxModelLen ? `${card.id} · context ${card.maxModelLen} tokens` : card.id;
      this.onModel();
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        if (this.api.key) this.api.setKey(null);
        this.name.textContent = 'API key required';
        this.askKey(this.dialog.open ? err.message : undefined);
      } else {
        this.name.textContent = this.modelId ?? 'model unavailable';
      }
      return false;
    }
  }

  private async poll(): Promise<void> {
    const r = await this.api.readiness();
    this.dot.dataset.state = r.ready ? 'ready' : r.status === 'unreachable' ? 'down' : 'loading';
    this.status.textContent = r.ready ? 'ready' : r.status;
    this.dot.title = `server: ${r.status}`;
    if (r.ready !== this.lastReady && this.lastReady !== null && !this.dialog.open) void this.refreshModel();
    this.lastReady = r.ready;
  }
}

/** Light/dark: follows prefers-color-scheme until toggled; the choice is remembered. */
export function setupTheme(button: HTMLButtonElement, storage: Storage): void {
  const root = document.documentElement;
  const saved = storage.getItem(THEME_KEY);
  if (saved === 'light' || saved === 'dark') root.dataset.theme = saved;
  const effective = () => root.dataset.theme ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  const label = () => button.setAttribute('aria-label', `Switch to ${effective() === 'dark' ? 'light' : 'dark'} theme`);
  label();
  button.addEventListener('click', () => {
    root.dataset.theme = effective() === 'dark' ? 'light' : 'dark';
    storage.setItem(THEME_KEY, root.dataset.theme);
    label();
  });
}
