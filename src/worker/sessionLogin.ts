import { setTimeout as delay } from 'node:timers/promises';
import type { LoginSpec } from '../core/task/model';
import { FetchFailure } from './fetcher';
import { SessionRetired, type SessionRef, type Sessions } from './sessions';

// A session's login, once for the fleet: the worker that takes the session's login lock logs it in, the others wait
// for its state. A login that failed is final for the session.

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

/** Longest a worker waits for another one to log a session in. */
const LOGIN_WAIT_MS = 60_000;

/**
 * Logs the session in unless it is already (`state`, as taken); another worker doing it is waited for. `attempt` logs
 * in: null when it worked, else why not.
 */
export async function loggedIn(
  pool: Sessions,
  session: SessionRef,
  state: string,
  login: LoginSpec,
  attempt: () => Promise<string | null>,
  log: Log,
): Promise<void> {
  if (!(await loginTurn(pool, session, state, login))) return;
  try {
    const outcome = await attempt();
    await pool.setLoginState(session, outcome === null ? 'ok' : `failed: ${outcome}`);
    if (outcome === null) log('info', `session ${session.slot} logged in at ${login.url}`);
    else {
      // Said once, by the worker that tried: the others read the state and fail their pages without a message.
      log('error', `login to ${login.url} failed: ${outcome} (session ${session.slot}); its pages fail as 'login'`);
      throw new FetchFailure('login', `login to ${login.url} failed: ${outcome}`, false);
    }
  } finally {
    await pool.unlockLogin(session);
  }
}

/** Whether this worker holds the session's login lock and must log it in (false: it is logged in already). */
async function loginTurn(pool: Sessions, session: SessionRef, state: string, login: LoginSpec): Promise<boolean> {
  const deadline = Date.now() + LOGIN_WAIT_MS;
  for (;;) {
    if (state === 'ok') return false;
    if (state.startsWith('failed'))
      throw new FetchFailure('login', `login to ${login.url} ${state} (session ${session.slot})`, false);
    if (state === 'retired') throw new SessionRetired(`session ${session.slot} was retired before it logged in`);
    if (await pool.lockLogin(session, LOGIN_WAIT_MS)) {
      // Read again under the lock: another worker may have logged the session in between this worker's read and
      // its lock (it released the lock when done), and a second login of the same session is a login too many
      // (seen under load: 4 logins for a pool of 2 and 1 block).
      state = await pool.loginState(session);
      if (state !== 'ok' && state !== 'retired' && !state.startsWith('failed')) return true;
      await pool.unlockLogin(session);
      continue;
    }
    if (Date.now() > deadline)
      throw new FetchFailure('login', `gave up waiting for the login of session ${session.slot}`, true);
    await delay(100);
    state = await pool.loginState(session);
  }
}
