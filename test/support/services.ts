// Owns the real backing services the tests run against: a throwaway redis-server and a
// MongoDB-wire server (FerretDB on SQLite, or whatever MONGODB_URI names), each on a free
// loopback port, with start-up probes and a stop that leaves nothing behind.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import mongoose from 'mongoose';

export interface RedisHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface MongoHandle {
  uri: string;
  stop(): Promise<void>;
}

const loopbackHost = '127.0.0.1';
const startupTimeoutMs = 20_000;
const outputTailLength = 4_000;

/** Asks the kernel for a free loopback port by listening on port 0, then releases it. */
export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, loopbackHost, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port of a probe listener'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** Starts `redis-server` without persistence on a free loopback port and waits for PING; `extraArgs` go last (e.g. a `--maxmemory-policy`). */
/** How many databases the run's shared redis-server has (global-setup): one per harness, see harness.ts. */
export const TEST_REDIS_DATABASES = 10_000;

/** `firstPort`: the port to try first (a test of the start-up check gives one another server holds). */
export async function startRedis(extraArgs: readonly string[] = [], firstPort?: number): Promise<RedisHandle> {
  const executable = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  let lastError: unknown;
  // A port found free can be taken before redis binds it: retry with a fresh one.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = attempt === 0 && firstPort !== undefined ? firstPort : await findFreePort();
    const workDirectory = await mkdtemp(join(tmpdir(), 'wa-test-redis-'));
    const child = spawnService(executable, [
      '--port',
      String(port),
      '--bind',
      loopbackHost,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      workDirectory,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      ...extraArgs,
    ]);
    try {
      await waitUntil(child, () => redisAnswersPing(port), `redis-server on port ${port}`, port);
      return {
        url: `redis://${loopbackHost}:${port}`,
        port,
        stop: async () => {
          await stopProcess(child.process);
          await rm(workDirectory, { recursive: true, force: true });
        },
      };
    } catch (error) {
      lastError = error;
      await stopProcess(child.process);
      await rm(workDirectory, { recursive: true, force: true });
    }
  }
  throw lastError;
}

export interface RedisClusterHandle {
  /** `REDIS_CLUSTER_NODES` for it: `127.0.0.1:<port>` of each primary, comma-separated. */
  nodes: string;
  /** Every node requires it (`requirepass`), so clients must pass credentials through. */
  password: string;
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster of three primaries (no replicas) on free loopback ports, each node with
 * AOF on and its own temporary directory, created with `redis-cli --cluster create`; resolves
 * once every node reports `cluster_state:ok`. Started only by the suites that need it.
 */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const executable = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const password = randomBytes(12).toString('hex');
  const nodes: { port: number; child: SpawnedService; directory: string }[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => stopProcess(node.child.process)));
    await Promise.all(nodes.map((node) => rm(node.directory, { recursive: true, force: true })));
  };
  try {
    for (let index = 0; index < 3; index += 1) {
      const port = await findFreePort();
      const directory = await mkdtemp(join(tmpdir(), 'wa-test-redis-cluster-'));
      // The cluster bus needs a port of its own (default port + 10000, which may be taken).
      const busPort = await findFreePort();
      const child = spawnService(executable, [
        ...['--port', String(port), '--bind', loopbackHost, '--dir', directory, '--daemonize', 'no', '--loglevel', 'warning'],
        ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort), '--cluster-node-timeout', '5000'],
        ...['--appendonly', 'yes', '--save', '', '--requirepass', password, '--masterauth', password],
      ]);
      nodes.push({ port, child, directory });
    }
    for (const node of nodes)
      await waitUntil(node.child, () => redisReplies(node.port, password, 'PING', '+PONG'), `cluster node on port ${node.port}`, node.port);
    const addresses = nodes.map((node) => `${loopbackHost}:${node.port}`);
    await new Promise<void>((resolve, reject) => {
      const cli = process.env.REDIS_CLI_BIN ?? 'redis-cli';
      const args = ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes', '-a', password, '--no-auth-warning'];
      execFile(cli, args, { timeout: startupTimeoutMs }, (error, stdout, stderr) => {
        if (error) reject(new Error(`redis-cli --cluster create failed: ${error.message}\n${tail(stdout + stderr)}`));
        else resolve();
      });
    });
    for (const node of nodes) {
      await waitUntil(node.child, () => redisReplies(node.port, password, 'CLUSTER INFO', 'cluster_state:ok'), `cluster state on port ${node.port}`);
    }
    return { nodes: addresses.join(','), password, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface RestartableRedisHandle extends RedisHandle {
  /** Stops it (SIGTERM: Redis writes and fsyncs its AOF) and starts it again on the same port and data directory. */
  restart(): Promise<void>;
}

/** A redis-server of its own with AOF on (`appendfsync everysec`, as docs/deployment.md asks), for restart tests. */
export async function startRestartableRedis(): Promise<RestartableRedisHandle> {
  const executable = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const port = await findFreePort();
  const workDirectory = await mkdtemp(join(tmpdir(), 'wa-test-redis-aof-'));
  const launch = async () => {
    const child = spawnService(executable, [
      ...['--port', String(port), '--bind', loopbackHost, '--save', '', '--dir', workDirectory],
      ...['--appendonly', 'yes', '--appendfsync', 'everysec', '--daemonize', 'no', '--loglevel', 'warning'],
    ]);
    await waitUntil(child, () => redisAnswersPing(port), `redis-server (AOF) on port ${port}`, port);
    return child;
  };
  let current = await launch();
  return {
    url: `redis://${loopbackHost}:${port}`,
    port,
    async restart() {
      await stopProcess(current.process);
      for (let attempt = 0; ; attempt += 1) {
        try {
          current = await launch();
          return;
        } catch (error) {
          if (attempt >= 2) throw error;
          await sleep(200);
        }
      }
    },
    async stop() {
      await stopProcess(current.process);
      await rm(workDirectory, { recursive: true, force: true });
    },
  };
}

/**
 * Returns MONGODB_URI when it is set (stop does nothing); otherwise starts FerretDB on SQLite
 * in a temporary directory on a free loopback port and waits until a mongo `ping` answers.
 */
export async function startMongo(): Promise<MongoHandle> {
  const givenUri = process.env.MONGODB_URI;
  if (givenUri !== undefined && givenUri !== '') {
    return { uri: givenUri, stop: async () => {} };
  }
  const binary = await ferretDbBinary();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await findFreePort();
    const stateDirectory = await mkdtemp(join(tmpdir(), 'wa-test-ferretdb-'));
    const child = spawnFerretDb(binary, port, stateDirectory);
    const uri = `mongodb://${loopbackHost}:${port}/`;
    try {
      await waitUntil(child, async () => (await tcpAccepts(port)) && (await mongoAnswersPing(uri)), `FerretDB on port ${port}`, port);
      return {
        uri,
        stop: async () => {
          await stopProcess(child.process);
          await rm(stateDirectory, { recursive: true, force: true });
        },
      };
    } catch (error) {
      lastError = error;
      await stopProcess(child.process);
      await rm(stateDirectory, { recursive: true, force: true });
    }
  }
  throw lastError;
}

export interface RestartableMongoHandle extends MongoHandle {
  /** SIGKILLs the server (no clean shutdown) and waits until it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data directory and waits until it answers. */
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers, like a hung database. */
  pause(): void;
  /** Thaws a paused server (SIGCONT). */
  resume(): void;
}

/**
 * A FerretDB of its own (never the shared one) that a test can kill and restart, for outage
 * tests: same port and SQLite data directory across restarts, so data survives like a real
 * database restart.
 */
/** FerretDB on SQLite in `stateDirectory`, on loopback `port`, telemetry off. */
function spawnFerretDb(binary: string, port: number, stateDirectory: string): SpawnedService {
  return spawnService(
    binary,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${stateDirectory}/`,
      `--state-dir=${stateDirectory}`,
      `--listen-addr=${loopbackHost}:${port}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=error',
    ],
    { FERRETDB_TELEMETRY: 'disable', DO_NOT_TRACK: '1' },
  );
}

/** `firstPort`: the port to try first (a test of the start-up check gives one another server holds). */
export async function startRestartableFerretDb(firstPort?: number): Promise<RestartableMongoHandle> {
  const binary = await ferretDbBinary();
  const stateDirectory = await mkdtemp(join(tmpdir(), 'wa-test-ferretdb-'));
  let port = firstPort ?? (await findFreePort());
  const uriOf = () => `mongodb://${loopbackHost}:${port}/`;
  const launch = async (): Promise<SpawnedService> => {
    const child = spawnFerretDb(binary, port, stateDirectory);
    try {
      await waitUntil(child, async () => (await tcpAccepts(port)) && (await mongoAnswersPing(uriOf())), `FerretDB on port ${port}`, port);
    } catch (error) {
      await stopProcess(child.process);
      throw error;
    }
    return child;
  };
  let current: SpawnedService | undefined;
  // A port found free can be taken before FerretDB binds it: the first start retries with a fresh one.
  for (let attempt = 0; current === undefined; attempt += 1) {
    try {
      current = await launch();
    } catch (error) {
      if (attempt >= 2) throw error;
      port = await findFreePort();
    }
  }
  const uri = uriOf();
  const kill = async () => {
    const child = current?.process;
    current = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  };
  return {
    uri,
    kill,
    pause: () => void current?.process.kill('SIGSTOP'),
    resume: () => void current?.process.kill('SIGCONT'),
    async restart() {
      await kill();
      // The port was just released by a killed process: retry until it binds again.
      for (let attempt = 0; ; attempt += 1) {
        try {
          current = await launch();
          return;
        } catch (error) {
          if (attempt >= 2) throw error;
          await sleep(200);
        }
      }
    },
    async stop() {
      current?.process.kill('SIGCONT');
      if (current) await stopProcess(current.process);
      current = undefined;
      await rm(stateDirectory, { recursive: true, force: true });
    },
  };
}

/** The FerretDB binary: FERRETDB_BIN if set, else whatever scripts/install-ferretdb.sh prints (it builds on first use). */
export async function ferretDbBinary(): Promise<string> {
  const preset = process.env.FERRETDB_BIN;
  if (preset !== undefined && preset !== '') return preset;
  const script = fileURLToPath(new URL('../../scripts/install-ferretdb.sh', import.meta.url));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('bash', [script], { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000 }, (error, output, errorOutput) => {
      if (error) {
        reject(new Error(`scripts/install-ferretdb.sh failed: ${error.message}\n${tail(errorOutput)}`));
        return;
      }
      resolve(output);
    });
  });
  const binary = stdout.trim().split('\n').at(-1)?.trim();
  if (binary === undefined || binary === '') throw new Error('scripts/install-ferretdb.sh printed no binary path');
  return binary;
}

// Children still running when this process exits (a crash, a missed teardown) are killed, so
// no redis-server or FerretDB outlives the test run.
const liveChildren = new Set<ChildProcess>();
let exitSafetyNetInstalled = false;

function ensureExitSafetyNet(): void {
  if (exitSafetyNetInstalled) return;
  exitSafetyNetInstalled = true;
  process.once('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
  });
}

interface SpawnedService {
  process: ChildProcess;
  output(): string;
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  spawnError(): Error | undefined;
}

function spawnService(executable: string, args: string[], extraEnvironment: Record<string, string> = {}): SpawnedService {
  const child = spawn(executable, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...extraEnvironment },
  });
  let output = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let failure: Error | undefined;
  const collect = (chunk: Buffer): void => {
    output = tail(output + chunk.toString('utf8'));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.once('exit', (code, signal) => {
    exit = { code, signal };
  });
  child.once('error', (error) => {
    failure = error;
  });
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  ensureExitSafetyNet();
  // A service left running must never keep the test runner's event loop alive.
  child.unref();
  // Piped stdio of a child process are net.Socket instances; their handles must not hold the loop either.
  (child.stdout as Socket | null)?.unref();
  (child.stderr as Socket | null)?.unref();
  return { process: child, output: () => output, exited: () => exit, spawnError: () => failure };
}

/**
 * Waits until `probe` answers and, given its `port`, the process listening there is the one
 * spawned: a port found free can be taken by another test's server before this one binds it
 * (this one then exits), and that server would answer the probe — a handle to someone else's
 * server, which this test's pause, flush or stop never reaches.
 */
async function waitUntil(service: SpawnedService, probe: () => Promise<boolean>, description: string, port?: number): Promise<void> {
  const deadline = Date.now() + startupTimeoutMs;
  while (Date.now() < deadline) {
    const spawnError = service.spawnError();
    if (spawnError !== undefined) throw new Error(`${description} could not start: ${spawnError.message}`);
    const exit = service.exited();
    if (exit !== undefined) {
      throw new Error(`${description} exited early (code ${exit.code}, signal ${exit.signal}):\n${service.output()}`);
    }
    if ((await probe().catch(() => false)) && (port === undefined || (await listensOn(service.process, port)))) return;
    await sleep(50);
  }
  throw new Error(`${description} did not answer within ${startupTimeoutMs} ms:\n${service.output()}`);
}

/**
 * Whether `child` holds the listening TCP socket of `port` (Linux: the socket's inode in
 * /proc/net/tcp{,6} among the process's file descriptors). True where /proc does not tell.
 */
async function listensOn(child: ChildProcess, port: number): Promise<boolean> {
  const tables = await Promise.all(['/proc/net/tcp', '/proc/net/tcp6'].map((table) => readFile(table, 'utf8').catch(() => undefined)));
  if (tables.every((table) => table === undefined) || child.pid === undefined) return true;
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  for (const line of tables.join('\n').split('\n')) {
    // sl local_address rem_address st … inode: a LISTEN socket (st 0A) on the port.
    const fields = line.trim().split(/\s+/);
    if (fields[1]?.endsWith(hexPort) && fields[3] === '0A' && fields[9] !== undefined) inodes.add(fields[9]);
  }
  if (inodes.size === 0) return false;
  const descriptors = await readdir(`/proc/${child.pid}/fd`).catch(() => [] as string[]);
  for (const descriptor of descriptors) {
    const target = await readlink(`/proc/${child.pid}/fd/${descriptor}`).catch(() => '');
    if (inodes.has(/^socket:\[(\d+)\]$/.exec(target)?.[1] ?? '')) return true;
  }
  return false;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function tcpAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: loopbackHost, port });
    socket.setTimeout(1_000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Sends an inline PING over a raw socket: no client library, so no reconnect noise while it starts. */
function redisAnswersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: loopbackHost, port });
    let reply = '';
    const finish = (answer: boolean): void => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1_000);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}

/** Sends AUTH then one inline command over a raw socket; true once the reply contains `expected`. */
function redisReplies(port: number, password: string, command: string, expected: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: loopbackHost, port });
    let reply = '';
    const finish = (answer: boolean): void => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1_000);
    socket.once('connect', () => socket.write(`AUTH ${password}\r\n${command}\r\n`));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('utf8');
      if (reply.includes(expected)) finish(true);
      else if (reply.startsWith('-') || reply.includes('\r\n-') || reply.includes('cluster_state:')) finish(false);
    });
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}

async function mongoAnswersPing(uri: string): Promise<boolean> {
  const connection = mongoose.createConnection(uri, { serverSelectionTimeoutMS: 1_500, connectTimeoutMS: 1_500 });
  try {
    await connection.asPromise();
    const database = connection.db;
    if (database === undefined) return false;
    const answer = await database.admin().ping();
    return answer.ok === 1;
  } finally {
    await connection.close(true).catch(() => {});
  }
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

function tail(text: string): string {
  return text.length > outputTailLength ? text.slice(-outputTailLength) : text;
}
