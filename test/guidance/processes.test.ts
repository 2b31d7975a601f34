/**
 * Two worker processes read the same guidance: a publish through one instance's admin API is
 * quoted by two other OS processes within seconds, and so is a rollback; a process started later
 * reads the live version from MongoDB.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import request from 'supertest';
import { knowledgeMongoUri, ownKnowledgeRedisUrl } from '../support/knowledge-rig.js';
import { GUIDANCE_ADMIN_TOKEN, startGuidanceRig, type GuidanceRig } from '../support/guidance-rig.js';
import { RUN_TS } from '../support/run-ts.js';

const auth = { Authorization: `Bearer ${GUIDANCE_ADMIN_TOKEN}` };

interface Guided {
  section: string;
  entries: string[];
}
interface GuidanceProcess {
  ask(line: string): Promise<Guided>;
  stop(): Promise<void>;
}

async function startProcess(env: Record<string, string>): Promise<GuidanceProcess> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [...RUN_TS, 'test/support/guidance-process.ts'], {
    env: { ...process.env, ...env },
    stdio: 'pipe',
  });
  let output = '';
  const waiters: ((line: string) => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    for (let newline = output.indexOf('\n'); newline >= 0; newline = output.indexOf('\n')) {
      const line = output.slice(0, newline);
      output = output.slice(newline + 1);
      waiters.shift()?.(line);
    }
  });
  const nextLine = () => new Promise<string>((resolve) => waiters.push(resolve));
  let timer: NodeJS.Timeout | undefined;
  const ready = await Promise.race([nextLine(), new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timeout'), 45_000)))]);
  clearTimeout(timer);
  if (ready !== 'guidance-ready') {
    child.kill('SIGKILL');
    throw new Error(`guidance process did not start: ${ready}`);
  }
  return {
    async ask(line) {
      const answer = nextLine();
      child.stdin.write(`${line}\n`);
      return JSON.parse(await answer) as Guided;
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end();
      await exited;
    },
  };
}

async function eventually(read: () => Promise<Guided>, accept: (guided: Guided) => boolean, ms = 5_000): Promise<Guided> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('two worker processes', () => {
  let rig: GuidanceRig;
  const workers: GuidanceProcess[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    const redisUrl = await ownKnowledgeRedisUrl();
    const mongoUri = knowledgeMongoUri();
    env = { GUIDANCE_TEST_REDIS_URL: redisUrl, GUIDANCE_TEST_MONGODB_URI: mongoUri };
    rig = await startGuidanceRig({ redisUrl, mongoUri });
    workers.push(await startProcess(env), await startProcess(env));
  }, 90_000);
  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await rig?.close();
  });

  it('quote a publish and a rollback within seconds', async () => {
    const post = (text: string) => request(rig.app).post('/admin/guidance/entries').set(auth).send({ category: 'policy', text });
    const first = await post('Never promise a delivery date.');
    expect(first.status).toBe(201);
    expect((await request(rig.app).post('/admin/guidance/publish').set(auth)).status).toBe(201);
    for (const worker of workers) {
      const guided = await eventually(
        () => worker.ask('support whatsapp'),
        (seen) => seen.section.includes('delivery date'),
      );
      expect(guided.section).toContain('Never promise a delivery date.');
    }

    expect(
      (
        await request(rig.app)
          .delete(`/admin/guidance/entries/${(first.body as { id: string }).id}`)
          .set(auth)
      ).status,
    ).toBe(204);
    expect((await post('A chargeback always goes to a person.')).status).toBe(201);
    expect((await request(rig.app).post('/admin/guidance/publish').set(auth)).body).toMatchObject({ version: 2 });
    for (const worker of workers) {
      const guided = await eventually(
        () => worker.ask('support whatsapp'),
        (seen) => seen.section.includes('chargeback'),
      );
      expect(guided.section).toContain('A chargeback always goes to a person.');
      expect(guided.section).not.toContain('delivery date');
    }

    expect((await request(rig.app).post('/admin/guidance/rollback').set(auth).send({ version: 1 })).body).toMatchObject({ version: 3, restoredFrom: 1 });
    for (const worker of workers) {
      const guided = await eventually(
        () => worker.ask('support whatsapp'),
        (seen) => seen.section.includes('delivery date'),
      );
      expect(guided.section).toContain('Never promise a delivery date.');
      expect(guided.section).not.toContain('chargeback');
    }

    const later = await startProcess(env);
    workers.push(later);
    expect((await later.ask('sales web')).section).toContain('Never promise a delivery date.');
    // Each process publishes the version it holds (a status written just after the version is read).
    const versions = async () =>
      ((await request(rig.app).get('/admin/guidance').set(auth)).body as { workers: { version: number }[] }).workers.map((w) => w.version);
    for (let seen = await versions(), until = Date.now() + 5_000; ; seen = await versions()) {
      if (seen.join() === '3,3,3,3' || Date.now() > until) {
        expect(seen).toEqual([3, 3, 3, 3]);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 90_000);
});
