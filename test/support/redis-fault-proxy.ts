/**
 * A TCP proxy in front of a real Redis that fails the way a Redis restart does, on cue:
 *   - `loseReplyTo(matches)`: the next command that matches runs on Redis, but its client's
 *     connection is cut before the answer arrives (a server shut down right after executing a
 *     command writes no reply). The client reconnects and, like ioredis, may send it again.
 *   - `cut()` / `restore()`: every connection is closed and new ones are refused until restored
 *     on the same port (Redis down, then back with its data).
 * Commands are read whole (`respCommands`), so a command sharing a packet with another is never missed.
 */
import net from 'node:net';

/**
 * Splits a client's byte stream into whole RESP commands (`*N` arrays of `$len` bulk strings, as
 * every Redis client sends them): a socket may deliver two commands in one chunk, or one in two.
 */
export function respCommands(): (chunk: Buffer) => Buffer[] {
  let pending = Buffer.alloc(0);
  /** The end of the command starting at `start`, or -1 while it is incomplete. */
  const commandEnd = (start: number): number => {
    const lineEnd = (from: number) => pending.indexOf('\r\n', from, 'latin1');
    let eol = lineEnd(start);
    if (eol < 0) return -1;
    if (pending[start] !== 0x2a /* '*' */) return eol + 2; // an inline command: one line
    const count = Number(pending.toString('latin1', start + 1, eol));
    let at = eol + 2;
    for (let index = 0; index < count; index += 1) {
      eol = lineEnd(at);
      if (eol < 0) return -1;
      at = eol + 2 + Number(pending.toString('latin1', at + 1, eol)) + 2;
      if (at > pending.length) return -1;
    }
    return at;
  };
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    const commands: Buffer[] = [];
    let start = 0;
    for (let end = commandEnd(0); end > 0; end = commandEnd(start)) {
      commands.push(pending.subarray(start, end));
      start = end;
    }
    pending = Buffer.from(pending.subarray(start));
    return commands;
  };
}

export interface RedisFaultProxy {
  /** A Redis URL through the proxy (the target's database and credentials kept). */
  url: string;
  /** Arms once: the next command whose RESP text matches runs, and its answer never reaches the client. */
  loseReplyTo(matches: (command: string) => boolean): void;
  /** How many answers the proxy kept from their clients so far. */
  lostReplies(): number;
  /** Closes every connection and refuses new ones (resolves once the port is closed). */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startRedisFaultProxy(targetUrl: string): Promise<RedisFaultProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  let armed: ((command: string) => boolean) | undefined;
  let lost = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const split = respCommands();
    /** A command whose answer must not arrive was sent on: the next bytes from Redis end the connection. */
    let doomed = false;
    client.on('data', (chunk) => {
      for (const command of split(chunk)) {
        if (armed?.(command.toString('latin1'))) {
          armed = undefined;
          doomed = true;
        }
        upstream.write(command);
      }
    });
    upstream.on('data', (chunk) => {
      if (!doomed) return void client.write(chunk);
      lost += 1;
      client.destroy();
      upstream.destroy();
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const cut = async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    url: url.toString(),
    loseReplyTo(matches) {
      armed = matches;
    },
    lostReplies: () => lost,
    cut,
    restore: () => listen(port),
    close: () => (server.listening ? cut() : Promise.resolve()),
  };
}
