/**
 * Two worker processes answer from the same knowledge: an entry added through one instance's
 * admin API is found by another OS process within seconds, and its removal likewise; a
 * process started later builds its index from MongoDB with everything already there.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import request from 'supertest';
import { KNOWLEDGE_ADMIN_TOKEN, knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';
import { RUN_TS } from '../support/run-ts.js';

const auth = { Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` };

interface KnowledgeProcess {
  ask(query: string): Promise<string[]>;
  stop(): Promise<void>;
}

async function startProcess(env: Record<string, string>): Promise<KnowledgeProcess> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [...RUN_TS, 'test/support/knowledge-process.ts'], {
    env: { ...process.env, ...env },
    stdio: 'pipe',
  });
  let output = '';
  const waiters: ((line: string) => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    let newline = output.indexOf('\n');
    while (newline >= 0) {
      const line = output.slice(0, newline);
      output = output.slice(newline + 1);
      waiters.shift()?.(line);
      newline = output.indexOf('\n');
    }
  });
  const nextLine = () => new Promise<string>((resolve) => waiters.push(resolve));
  let timer: NodeJS.Timeout | undefined;
  const ready = await Promise.race([nextLine(), new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timeout'), 45_000)))]);
  clearTimeout(timer);
  if (ready !== 'knowledge-ready') {
    child.kill('SIGKILL');
    throw new Error(`knowledge process did not start: ${ready}`);
  }
  return {
    async ask(query) {
      const answer = nextLine();
      child.stdin.write(`${query}\n`);
      return JSON.parse(await answer) as string[];
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end();
      await exited;
    },
  };
}

async function eventually(read: () => Promise<string[]>, accept: (titles: string[]) => boolean, ms = 5_000): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('two worker processes', () => {
  let rig: KnowledgeRig;
  let other: KnowledgeProcess | undefined;
  let later: KnowledgeProcess | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    const redisUrl = await ownKnowledgeRedisUrl();
    const mongoUri = knowledgeMongoUri();
    env = { KNOWLEDGE_TEST_REDIS_URL: redisUrl, KNOWLEDGE_TEST_MONGODB_URI: mongoUri };
    rig = await startKnowledgeRig({ redisUrl, mongoUri });
    other = await startProcess(env);
  }, 60_000);
  afterAll(async () => {
    await other?.stop();
    await later?.stop();
    await rig?.close();
  });

  it('see the same add and delete within seconds', async () => {
    const added = await request(rig.app)
      .post('/admin/knowledge/faq')
      .set(auth)
      .send({ question: 'Can I collect my order in the Leeds shop?', answer: 'Yes: click and collect in Leeds is free and ready within 2 hours.' });
    expect(added.status).toBe(201);
    const started = Date.now();
    expect(
      await eventually(
        () => other!.ask('collect order Leeds shop'),
        (titles) => titles.length > 0,
      ),
    ).toEqual(['Can I collect my order in the Leeds shop?']);
    expect(Date.now() - started).toBeLessThan(5_000);

    later = await startProcess(env);
    expect(await later.ask('collect order Leeds shop')).toEqual(['Can I collect my order in the Leeds shop?']);

    const id = (added.body as { entries: { id: string }[] }).entries[0]!.id;
    expect((await request(rig.app).delete(`/admin/knowledge/faq/${id}`).set(auth)).status).toBe(204);
    expect(
      await eventually(
        () => other!.ask('collect order Leeds shop'),
        (titles) => titles.length === 0,
      ),
    ).toEqual([]);
    expect(
      await eventually(
        () => later!.ask('collect order Leeds shop'),
        (titles) => titles.length === 0,
      ),
    ).toEqual([]);
  }, 60_000);
});
