import { StoreDataError, StoreUnavailableError } from './types';

// PostgreSQL's failures as the writer needs them: a server it cannot reach (or a transient state: shutdown,
// timeout, deadlock) is StoreUnavailableError and is retried with backoff; data the server rejects is
// StoreDataError and is isolated row by row; the rest say what to fix (login, database, permissions).

export function classify(err: unknown, what: string, location: string, schema: string): Error {
  if (err instanceof StoreUnavailableError || err instanceof StoreDataError) return err;
  const e = err as { code?: string; message?: string };
  const msg = e.message ?? String(err);
  const code = e.code ?? '';
  const where = `PostgreSQL ${location}`;
  if (isConnectionError(err) || TRANSIENT_CODES.has(code)) {
    return new StoreUnavailableError(
      `cannot reach ${where} to ${what}: ${msg} — is the server running and the URL's host and port right?`,
      { cause: err },
    );
  }
  if (code.startsWith('22') || code.startsWith('23') || code === '54000') {
    return new StoreDataError(`${where} rejected the data (${what}): ${msg}`, { cause: err });
  }
  if (code === '28P01' || code === '28000')
    return new Error(`${where} refused the login: ${msg} — check the user and password in the store URL`, {
      cause: err,
    });
  if (code === '3D000')
    return new Error(`${where}: ${msg} — create the database (createdb) or fix the URL`, { cause: err });
  if (code === '42501')
    return new Error(`${where}: ${msg} — the user needs CREATE and USAGE on schema "${schema}"`, { cause: err });
  return new Error(`${where} cannot ${what}: ${msg}`, { cause: err });
}

// Connection exceptions, shutdowns, timeouts, too many connections, serialization failures, deadlocks: all pass.
const TRANSIENT_CODES = new Set([
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '40001',
  '40P01',
  '55P03',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e.code && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ENOTFOUND)$/.test(e.code))
    return true;
  if (e.code && e.code.startsWith('08')) return true;
  return /Connection terminated|timeout exceeded when trying to connect|connection error|Query read timeout|not queryable|ECONNREFUSED/i.test(
    e.message ?? '',
  );
}
