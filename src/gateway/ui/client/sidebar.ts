// The conversation list: select, new, rename (inline; Enter saves, Escape cancels), delete (confirmed).

import { h, iconButton } from './dom.js';
import type { Store } from './store.js';

export interface SidebarEvents {
  select(id: string): void;
  /** The list changed (rename/delete): save and re-render. */
  changed(): void;
}

export function renderSidebar(list: HTMLElement, store: Store, busyId: string | null, ev: SidebarEvents): void {
  list.replaceChildren(
    ...store.conversations.map((c) => {
      const active = c.id === store.activeId;
      const open = h('button', { type: 'button', class: 'conv-open', 'aria-current': active ? 'true' : null, title: c.title }, c.title);
      open.addEventListener('click', () => ev.select(c.id));
      const rename = iconButton('edit', `Rename “${c.title}”`, 'conv-rename');
      const del = iconButton('trash', `Delete “${c.title}”`, 'conv-delete');
      del.disabled = c.id === busyId; // a conversation cannot be deleted while its reply streams
      const item = h('li', { class: `conv${active ? ' active' : ''}`, 'data-id': c.id }, open, rename, del);
      rename.addEventListener('click', () => {
        const input = h('input', { class: 'conv-title-input', 'aria-label': 'Conversation title', maxlength: 120 });
        input.value = c.title;
        let done = false;
        const finish = (commit: boolean) => {
          if (done) return;
          done = true;
          if (commit) store.rename(c.id, input.value);
          ev.changed();
        };
        input.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' && !e.isComposing) finish(true);
          else if (e.key === 'Escape') finish(false);
        });
        input.addEventListener('blur', () => finish(true));
        item.replaceChildren(input);
        input.focus();
        input.select();
      });
      del.addEventListener('click', () => {
        if (!confirm(`Delete “${c.title}”? This cannot be undone.`)) return;
        store.remove(c.id);
        ev.changed();
      });
      return item;
    }),
  );
}
