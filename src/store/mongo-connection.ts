/**
 * The process's MongoDB connection, opened in the background so that no process waits on
 * MongoDB to start: a turn never needs it (recent history, the send ledger and the transcript
 * outbox are Redis), so a worker or web process started during a MongoDB outage serves
 * customers at once, like one that was running when the outage began.
 *
 * Mongoose does not retry a first connection that failed (once connected, the driver reconnects
 * by itself), so the first connection is retried here with backoff until it succeeds. What
 * start-up used to do before serving (creating indexes and collections) runs once MongoDB
 * answers, each task retried until it succeeds. Until then mongoose buffers model operations
 * (callers time out and retry as in any outage), the transcript writer keeps retrying its batch,
 * and `ping` fails, so `/readyz` reports MongoDB `degraded`.
 */
import mongoose, { type Connection, type ConnectOptions } from 'mongoose';
import type { Logger } from '../logger.js';

const OPTIONS: ConnectOptions = { serverSelectionTimeoutMS: 5000, autoIndex: false, autoCreate: true };
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;

export interface MongoLink {
  /** Usable at once: operations wait (buffered) until the first connection is made. */
  connection: Connection;
  /** The database the URI names (what the outbox's key is named after), known before connecting. */
  databaseName: string;
  /** Runs `task` once MongoDB is connected (at once if it is), retrying it with backoff until it succeeds; `signal` aborts on close. */
  whenConnected(name: string, task: (signal: AbortSignal) => Promise<void>): void;
  /** Throws unless MongoDB is connected and answers a ping (readiness). */
  ping(): Promise<void>;
  /** Stops retrying and closes the connection. */
  close(): Promise<void>;
}

export function openMongo(uri: string, logger: Logger): MongoLink {
  const connection = mongoose.createConnection(uri, { ...OPTIONS });
  const databaseName = connection.getClient().db().databaseName;
  // Mongoose names a connection only once connected; what keys Redis data by it (usage counters) needs it now.
  Object.assign(connection, { name: databaseName });
  let closed = false;
  const stopping = new AbortController();
  const wakers = new Set<() => void>();
  /** Waits `ms`, or less when the link is closed meanwhile. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
    });

  /** True once connected; false when closed first. */
  const connected = (async (): Promise<boolean> => {
    let attempt = 0;
    let opening: Promise<unknown> = connection.asPromise();
    for (;;) {
      try {
        await opening;
        if (attempt > 0) logger.info('mongodb-connected', { attempts: attempt + 1 });
        return true;
      } catch (error) {
        attempt += 1;
        if (closed) return false;
        const retryInMs = Math.min(FIRST_RETRY_MS * 2 ** (attempt - 1), MAX_RETRY_MS);
        logger.warn('mongodb-connect-retrying', { attempts: attempt, retryInMs, error });
        await pause(retryInMs);
        if (closed) return false;
        opening = connection.openUri(uri, { ...OPTIONS });
      }
    }
  })();

  const tasks: Promise<void>[] = [];
  const run = async (name: string, task: (signal: AbortSignal) => Promise<void>) => {
    if (!(await connected)) return;
    for (let attempt = 1; !closed; attempt += 1) {
      try {
        await task(stopping.signal);
        return;
      } catch (error) {
        if (closed) return;
        const retryInMs = Math.min(FIRST_RETRY_MS * 2 ** (attempt - 1), MAX_RETRY_MS);
        logger.warn('mongodb-start-task-retrying', { task: name, attempts: attempt, retryInMs, error });
        await pause(retryInMs);
      }
    }
  };

  return {
    connection,
    databaseName,
    whenConnected(name, task) {
      tasks.push(run(name, task));
    },
    async ping() {
      const db = connection.db;
      if (!db) throw new Error('MongoDB is not connected yet');
      await db.admin().ping();
    },
    async close() {
      closed = true;
      stopping.abort();
      for (const wake of wakers) wake();
      // A connection attempt under way ends within serverSelectionTimeoutMS; closing ends the
      // tasks' operations still waiting on a MongoDB that does not answer.
      await connected;
      await connection.close();
      await Promise.all(tasks);
    },
  };
}
