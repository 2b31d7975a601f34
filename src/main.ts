/**
 * Process entry: `node dist/src/main.js web|worker|all`. `web` serves webhooks and health,
 * `worker` runs turns, `all` (the `npm start` default) runs both in one process. A worker runs a
 * turn a worker already died in in a child process of its own: this entry again, forked with
 * `--suspect-turn-child`, which serves nothing and takes no job but that one turn. On SIGTERM
 * or SIGINT it stops accepting, lets in-flight turns finish within SHUTDOWN_TIMEOUT_MS, closes
 * its connections and exits 0.
 */
import { createServer, type Server } from 'node:http';
import { loadConfig } from './config.js';
import { createServices } from './composition-root.js';
import { ConfigError } from './errors/index.js';
import { addReadinessCheck, createMetricsApp } from './http/app.js';
import { startProviderCheck } from './model/provider-check.js';
import { isolateSuspectTurns, isSuspectChildProcess } from './queue/suspect-child.js';

type ProcessRole = 'web' | 'worker' | 'all';

/** Listens on `port`; a port that can't be had is a `ConfigError` naming it and what to change. */
function listen(server: Server, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? `port ${port} is already in use by another program: stop it, or set PORT to a free port`
          : error.code === 'EACCES'
            ? `port ${port} needs privileges this process does not have: set PORT to a port above 1023`
            : `could not listen on port ${port} (${error.code ?? error.message}): set PORT to a free port`;
      reject(new ConfigError(why));
    };
    server.once('error', failed);
    server.listen(port, () => {
      server.off('error', failed);
      resolve(server);
    });
  });
}

async function main(): Promise<void> {
  // A suspect turn's child is a worker of its parent's, with nothing to serve or check.
  const child = isSuspectChildProcess();
  const role = child ? 'worker' : ((process.argv[2] ?? 'all') as ProcessRole);
  if (!['web', 'worker', 'all'].includes(role)) {
    throw new ConfigError(`unknown process type "${role}": expected web, worker or all`);
  }
  const config = loadConfig();
  isolateSuspectTurns();
  const services = await createServices(config);
  const { logger } = services;
  // Each configured model provider, asked once in the background (never waited on): a refused key
  // or model is one log line naming the variable, and /readyz says `model: degraded`. Not under
  // NODE_ENV=test: a test's process talks to loopback stubs only, never to a provider's host.
  // The same for each channel's credentials (Twilio's): a refusal is one line, /readyz degraded.
  if (config.env !== 'test' && !child) {
    for (const check of [startProviderCheck(config.model, logger).readiness, ...services.startChannelChecks()]) addReadinessCheck(services.app, check);
  }

  let server: Server | undefined;
  // Stopping is handled before the process says it listens: a SIGTERM sent as soon as it does is a
  // graceful stop, never the default signal's abrupt exit.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutdown-start', { signal });
    services.beginShutdown();
    const deadline = setTimeout(() => {
      logger.error('shutdown-timeout', { timeoutMs: config.worker.shutdownTimeoutMs });
      process.exit(1);
    }, config.worker.shutdownTimeoutMs);
    deadline.unref();
    const serverClosed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server?.closeIdleConnections();
    await services.close();
    await serverClosed;
    logger.info('shutdown-complete');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  if (role !== 'worker') {
    // Listening is confirmed, never assumed: a port another program holds stops the start here.
    server = await listen(createServer(services.app), config.port);
    logger.info('server-listening', { port: config.port, role });
    server.keepAliveTimeout = 65_000;
  }
  if (config.metrics.port !== undefined && !child) {
    // This process's counters, off the public port (loopback unless METRICS_HOST says otherwise).
    const { port, host, token } = config.metrics;
    createMetricsApp({ metrics: services.metrics, token, logger })
      .listen(port, host, () => logger.info('metrics-listening', { host, port }))
      .on('error', (error) => logger.error('metrics-listen-failed', { host, port, error }))
      .unref();
  }
  if (role !== 'web' && !stopping) {
    services.startWorker();
    logger.info('worker-started', { concurrency: config.worker.concurrency });
  }
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : `start-up failed: ${error instanceof Error ? error.stack : String(error)}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
