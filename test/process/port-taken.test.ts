/**
 * A port another program already holds stops the start with one clear line and a non-zero exit
 * — never a `server-listening` log over a port someone else answers on.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { ownRedisDatabase, testEnv } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { RUN_TS } from '../support/run-ts.js';

let squatter: Server;
let port: number;
beforeAll(async () => {
  port = await findFreePort();
  squatter = createServer((socket) => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 15\r\n\r\nanother program'));
  await new Promise<void>((resolve) => squatter.listen(port, resolve));
});
afterAll(async () => {
  await new Promise((resolve) => squatter.close(resolve));
});

test.each(['web', 'all'])(
  '`main %s` on a taken port exits 1 with one line naming the port and what to change',
  async (role) => {
    const child = spawn(process.execPath, [...RUN_TS, 'src/main.ts', role], {
      env: { PATH: process.env.PATH ?? '', ...testEnv('http://127.0.0.1:9', { PORT: String(port), LOG_LEVEL: 'info', ...ownRedisDatabase(6) }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const killOnExit = () => void child.kill('SIGKILL');
    process.once('exit', killOnExit);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    process.removeListener('exit', killOnExit);
    expect(code).toBe(1);
    expect(stderr).toBe(`port ${port} is already in use by another program: stop it, or set PORT to a free port\n`);
    expect(stdout).not.toContain('server-listening');
    expect(stdout).not.toContain('worker-started');
  },
  60_000,
);
