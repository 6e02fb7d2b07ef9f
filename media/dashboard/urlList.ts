// A list of a crawl's URLs, each with Open, Find URL and, when one was kept, its screenshot.

import { h, icon } from '../shared/dom';
import { shortUrl } from './figures';
import { send } from './host';

export function urlList(urls: readonly string[], shots: ReadonlySet<string>): HTMLElement {
  return h(
    'div',
    {},
    ...urls.map((u) =>
      h(
        'div',
        { class: 'url-row' },
        h(
          'button',
          { class: 'link', title: `Open ${u}`, on: { click: () => send({ type: 'openUrl', url: u }) } },
          shortUrl(u),
        ),
        h(
          'button',
          {
            class: 'link find',
            title: `Find ${u}: where it is and why`,
            'aria-label': `Find URL ${u}`,
            on: { click: () => send({ type: 'findUrl', url: u }) },
          },
          icon('search'),
        ),
        shots.has(u)
          ? h(
              'button',
              {
                class: 'link find',
                title: `Screenshot of ${u} as the browser rendered it`,
                'aria-label': `Screenshot of ${u}`,
                on: { click: () => send({ type: 'showScreenshot', url: u }) },
              },
              icon('device-camera'),
            )
          : null,
      ),
    ),
  );
}
