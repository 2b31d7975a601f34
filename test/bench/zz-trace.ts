// MONITOR trace of one WhatsApp message (after a warm-up message on another number), web + worker as the bench runs them.
import { Redis } from 'ioredis';
import { findFreePort } from '../support/services.js';
import { benchNumber, serviceEnv, sleep, spawnServiceProcess, startBacking, webhookSender } from './rig.js';
const backing = await startBacking();
const port = await findFreePort();
const env = serviceEnv(backing, port, { WORKER_CONCURRENCY: '32', TURN_LOCK_TTL_MS: '5000' });
const web = await spawnServiceProcess('web', env);
const worker = await spawnServiceProcess('worker', env);
const sender = webhookSender(port);
for (let i = 0; i < 5; i += 1) {
  await sender.post(benchNumber(301, i), `warm ${i}`);
}
await backing.twilio.waitForMessages(5, 30_000);
await sleep(1500);
const monitor = await new Redis(backing.redis.url).monitor();
const lines: string[] = [];
monitor.on('monitor', (time: string, args: string[]) => lines.push(`${time} ${args.map((a) => a.replace(/\s+/g, ' ').slice(0, 90)).join(' ')}`));
const n = Number(process.env.TRACE_MESSAGES ?? 1);
for (let i = 0; i < n; i += 1) await sender.post(benchNumber(302, 0), `hello ${i}`);
await backing.twilio.waitForMessages(5 + n, 30_000);
await sleep(1500);
monitor.disconnect();
process.stdout.write(lines.join('\n') + '\n');
await web.stop();
await worker.stop();
await backing.stop();
process.exit(0);
