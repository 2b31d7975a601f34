/**
 * Headless Chromium for browser tests: Debian's /usr/bin/chromium (never a downloaded build),
 * started by us with a fresh profile and driven over CDP by playwright-core. Every page is
 * watched: console output, page errors and dialogs are recorded, and any request that leaves
 * 127.0.0.1 is both blocked (host resolver rules) and recorded so the test can fail on it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const CHROMIUM_PATH = '/usr/bin/chromium';
const STARTUP_TIMEOUT_MS = 20_000;
const ARTIFACTS_DIRECTORY = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

export interface Viewport {
  width: number;
  height: number;
}

export const DESKTOP: Viewport = { width: 1280, height: 800 };
export const MOBILE: Viewport = { width: 390, height: 844 };

export interface PageOptions {
  /** A phone: touch events and the mobile viewport meta honoured. */
  touch?: boolean;
  /** The browser's language (`navigator.languages`, Accept-Language). */
  locale?: string;
  colorScheme?: 'light' | 'dark';
}

export interface PageRecord {
  console: { type: string; text: string }[];
  pageErrors: string[];
  dialogs: string[];
  /** Requests to anything other than 127.0.0.1 (blocked, but recorded). */
  offHostRequests: string[];
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  record: PageRecord;
  /** Another tab in the same context (same storage), watched into the same record. */
  newTab(): Promise<Page>;
  close(): Promise<void>;
}

export interface LaunchedBrowser {
  browser: Browser;
  /** A page in a fresh context (its own storage), watched; `options` emulate a phone with touch, a locale, a colour scheme. */
  newPage(viewport?: Viewport, options?: PageOptions): Promise<WatchedPage>;
  close(): Promise<void>;
}

function isLoopback(url: string): boolean {
  if (!/^(https?|wss?):/.test(url)) return true;
  return new URL(url).hostname === '127.0.0.1';
}

function watch(page: Page, record: PageRecord): void {
  page.on('console', (message) => record.console.push({ type: message.type(), text: message.text() }));
  page.on('pageerror', (error) => record.pageErrors.push(error.message));
  page.on('dialog', (dialog) => {
    record.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss().catch(() => undefined);
  });
  page.on('request', (request) => {
    if (!isLoopback(request.url())) record.offHostRequests.push(request.url());
  });
}

function readDevtoolsEndpoint(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`chromium did not start within ${STARTUP_TIMEOUT_MS} ms:\n${output.slice(-2000)}`)), STARTUP_TIMEOUT_MS);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`chromium exited during start-up (code ${code}, signal ${signal}):\n${output.slice(-2000)}`));
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

async function stopChromium(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // The browser leads its own process group (spawned detached): renderers and zygotes go with it.
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  signalGroup('SIGTERM');
  const timer = setTimeout(() => signalGroup('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Starts Chromium with a fresh profile directory and connects playwright-core to it. */
export async function launchBrowser(): Promise<LaunchedBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'wa-test-chromium-'));
  const child = spawn(
    CHROMIUM_PATH,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      // Nothing but loopback resolves, so no page can load from outside even by mistake.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--remote-debugging-address=127.0.0.1',
      '--remote-debugging-port=0',
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  const killOnExit = (): void => {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  };
  process.once('exit', killOnExit);

  let browser: Browser;
  try {
    browser = await chromium.connectOverCDP(await readDevtoolsEndpoint(child));
  } catch (error) {
    await stopChromium(child);
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
  // Keep draining stderr (Chromium's own noise) so the pipe never fills and blocks it.
  child.stderr?.resume();

  return {
    browser,
    async newPage(viewport = DESKTOP, options: PageOptions = {}) {
      const context = await browser.newContext({
        viewport,
        ...(options.touch ? { hasTouch: true, isMobile: true } : {}),
        ...(options.locale ? { locale: options.locale } : {}),
        ...(options.colorScheme ? { colorScheme: options.colorScheme } : {}),
      });
      const record: PageRecord = { console: [], pageErrors: [], dialogs: [], offHostRequests: [] };
      const page = await context.newPage();
      watch(page, record);
      return {
        page,
        context,
        record,
        async newTab() {
          const tab = await context.newPage();
          watch(tab, record);
          return tab;
        },
        close: () => context.close(),
      };
    },
    async close() {
      await browser.close().catch(() => undefined);
      await stopChromium(child);
      process.removeListener('exit', killOnExit);
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a PNG of the page's viewport as test-artifacts/<name>.png and returns its path. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS_DIRECTORY, { recursive: true });
  const path = join(ARTIFACTS_DIRECTORY, `${name}.png`);
  await page.screenshot({ path, animations: 'disabled' });
  return path;
}
