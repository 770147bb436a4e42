import type { Pool, PoolClient } from 'pg';

const RELISTEN_FIRST_DELAY_MS = 200;
const RELISTEN_MAX_DELAY_MS = 5_000;

export interface PgListening {
  /**
   * Resolves once every notice committed before the call has been handled: a round trip on the
   * listening connection, because PostgreSQL delivers a session's pending notices before the
   * answer to its next statement. Callers arriving while one is under way share the next.
   * Resolves at once while no connection listens (its loss already told the handlers).
   */
  caughtUp(): Promise<void>;
  /** Stops listening and gives the connection up. */
  close(): void;
}

export interface PgNoticeHandlers {
  /** Each notice's payload, as sent. */
  notice(payload: string): void;
  /**
   * The listening connection was lost (a database restart): notices sent until a new one listens
   * are missed. Called at the loss and before each new attempt, so a cache can forget again.
   */
  lost?(): void;
}

/**
 * LISTENs on `channel` (an identifier) over a connection of the pool kept for it, for as long as
 * the listening lasts. A connection lost later is replaced, retrying with a growing delay while
 * the database is away; the first LISTEN failing fails the call, and its caller decides.
 */
export async function listenOn(pg: Pool, channel: string, handlers: PgNoticeHandlers): Promise<PgListening> {
  let closed = false;
  let dropCurrent: (() => void) | undefined;
  let current: PoolClient | undefined;
  let relistenTimer: NodeJS.Timeout | undefined;

  const listen = async (): Promise<void> => {
    const client = await pg.connect();
    let released = false;
    // A lost connection can both fail the statement under way and emit 'error': release once.
    const drop = () => {
      if (!released) client.release(true);
      released = true;
    };
    client.on('notification', (message) => {
      if (message.channel === channel) handlers.notice(message.payload ?? '');
    });
    client.once('error', () => {
      drop();
      // Lost while setting up, listen() itself fails, and whoever called it decides.
      if (dropCurrent === drop) lost();
    });
    try {
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      drop();
      throw err;
    }
    if (closed) return drop();
    dropCurrent = drop;
    current = client;
  };

  const lost = () => {
    dropCurrent = undefined;
    current = undefined;
    handlers.lost?.();
    const retry = (delayMs: number) => {
      if (closed) return;
      relistenTimer = setTimeout(() => {
        handlers.lost?.();
        listen().catch(() => retry(Math.min(delayMs * 2, RELISTEN_MAX_DELAY_MS)));
      }, delayMs);
    };
    retry(RELISTEN_FIRST_DELAY_MS);
  };

  await listen();
  return {
    caughtUp: roundTrips(() => current),
    close() {
      closed = true;
      clearTimeout(relistenTimer);
      dropCurrent?.();
      dropCurrent = undefined;
      current = undefined;
    },
  };
}

/**
 * caughtUp() of a listening: a round trip on the connection `client()` answers. One begun before
 * a caller arrived may have passed before the notice that caller waits for was committed: that
 * caller waits for the following one, which serves everyone arriving meanwhile.
 */
function roundTrips(client: () => PoolClient | undefined): () => Promise<void> {
  let underWay: Promise<void> | undefined;
  let following: Promise<void> | undefined;
  const caughtUp = (): Promise<void> => {
    const listening = client();
    if (!listening) return Promise.resolve();
    if (underWay) {
      following ??= underWay.then(() => {
        following = undefined;
        return caughtUp();
      });
      return following;
    }
    underWay = listening
      .query('SELECT 1')
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => (underWay = undefined));
    return underWay;
  };
  return caughtUp;
}
