import { hasShape, isOneOf, isRecord, isStr } from '../results/validate';
import type { FromDashboard } from './protocol';

// Every message from the dashboard webview is checked here before the panel acts on it.

export function parseDashboardMessage(v: unknown): FromDashboard | null {
  if (!isRecord(v)) return null;
  const url = isStr(4096);
  switch (v.type) {
    case 'ready':
    case 'openResults':
    case 'openChanges':
      return hasShape(v, { type: isOneOf(v.type) }) ? (v as FromDashboard) : null;
    case 'retryGroup':
      return hasShape(v, {
        type: isOneOf('retryGroup'),
        group: (g): g is string => typeof g === 'string' && /^[\w.-]{1,64}$/.test(g),
      })
        ? (v as FromDashboard)
        : null;
    case 'openUrl':
    case 'findUrl':
    case 'showScreenshot':
      return hasShape(v, { type: isOneOf(v.type), url }) ? (v as FromDashboard) : null;
    default:
      return null;
  }
}
