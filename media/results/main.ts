import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-progress-ring/index.js';
import type { ToResults } from '../../src/extension/results/protocol';
import { addStyle } from '../shared/dom';
import { initGrid, render } from './grid';
import { renderHeader } from './header';
import { onMessage } from './messages';
import { send, vscode } from './state';
import css from './style.css';
import { initToolbar } from './toolbarActions';

// The results table: virtual scrolling over pages the extension reads from the store on demand. Only the
// visible rows (plus a margin) exist in the DOM; pages are cached here, up to a bound, and dropped when the
// query changes. Keyboard: arrows, Page Up/Down, Home/End move the selection, Enter opens the row detail,
// Escape closes it; headers are buttons (sort), filters are inputs.

addStyle(css);
initGrid();
initToolbar();
window.addEventListener('message', (e: MessageEvent<ToResults>) => onMessage(e.data));

renderHeader();
render();
send({ type: 'ready', ...(vscode.getState()?.view ? { view: vscode.getState()!.view } : {}) });
