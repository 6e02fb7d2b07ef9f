import type { Cheerio } from 'cheerio/slim';
import type { AnyNode } from 'domhandler';
import type { PageForm } from './build';

// A form of a page as a browser would submit it without anyone touching it (the HTML standard's "constructing the
// entry list", as Scrapy's FormRequest.from_response reads it): its action, its method, and the values of its
// named controls, hidden ones (a CSRF token) included. Used by `form:` follows and by form logins alike.

/** The form's action (resolved against `base`), method and entries; null for a form no browser would send here. */
export function readForm(form: Cheerio<AnyNode>, base: string): PageForm | null {
  const method = (form.attr('method') ?? 'get').trim().toLowerCase();
  // 'dialog' closes a dialog, it sends nothing.
  if (method === 'dialog') return null;
  let action: string;
  try {
    action = new URL(form.attr('action')?.trim() || base, base).href;
  } catch {
    return null;
  }
  const pairs: [string, string][] = [];
  form.find('input[name], textarea[name], select[name], button[name]').each((_, node) => {
    const el = node;
    const attrs = el.attribs;
    const name = attrs.name!;
    if ('disabled' in attrs || el.name === 'button') return;
    const type = (attrs.type ?? '').toLowerCase();
    if (['submit', 'button', 'image', 'reset', 'file'].includes(type)) return;
    if ((type === 'checkbox' || type === 'radio') && !('checked' in attrs)) return;
    const e = form.find(el);
    let value: string;
    if (el.name === 'select') {
      const options = e.find('option');
      const chosen = options.filter('[selected]').first();
      const opt = chosen.length ? chosen : options.first();
      if (opt.length === 0) return;
      value = opt.attr('value') ?? opt.text().trim();
    } else if (el.name === 'textarea') value = e.text();
    else if (type === 'checkbox' || type === 'radio') value = attrs.value ?? 'on';
    else value = attrs.value ?? '';
    pairs.push([name, value]);
  });
  return { action, method: method === 'post' ? 'POST' : 'GET', pairs };
}
