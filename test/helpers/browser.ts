// Real Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core (never a downloaded
// browser), with fake microphone/camera devices and WebRTC allowed on loopback. Playwright gives every launch a fresh
// user-data dir.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
// Brings in the page's `window.softphone` declaration for code the tests evaluate in the page.
import type {} from '../../sdk/page.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
  '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', '--allow-loopback-in-peer-connection',
  // Lets tests read the fake microphone through Web Audio without a click.
  '--autoplay-policy=no-user-gesture-required',
];

/** The reason to skip browser tests (a tap `skip` value), or false when Chromium is installed. */
export const chromiumSkip: string | false = existsSync(CHROMIUM_PATH)
  ? false
  : `${CHROMIUM_PATH} is missing: apt-get install -y chromium (.ci/run installs it)`;

interface TapLike { teardown(fn: () => unknown): void }

/** Launches Chromium, closed when the test ends. */
export async function launchChromium(t: TapLike): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_FLAGS, timeout: 120_000,
  });
  t.teardown(() => browser.close());
  return browser;
}

export interface WatchedPage {
  page: Page;
  /** Console errors, uncaught exceptions and failed requests seen so far. */
  problems: string[];
}

/** A new page in its own context that records every console error, page error and failed request. */
export async function openPage(browser: Browser, t: TapLike): Promise<WatchedPage> {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  // Chromium's own PDF viewer (a chrome-extension:// frame) has its loads aborted when the page replaces the PDF it
  // shows; those are the browser's requests, not the page's.
  page.on('requestfailed', (r) => {
    if (!r.url().startsWith('chrome-extension://')) problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`http ${r.status()}: ${r.url()}`); });
  return { page, problems };
}

/** Polls fn inside the page (awaiting it when it is async) until it returns a truthy value; generous deadline, the
 *  machine is shared. */
export async function pageEventually<T>(page: Page, fn: () => T | Promise<T>, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    // A throw (the page still loading, say) counts as "not yet"; the last one is reported at the deadline.
    last = await page.evaluate(fn).catch((e: Error) => `threw: ${e.message}`);
    if (last && !(typeof last === 'string' && last.startsWith('threw: '))) return last as NonNullable<T>;
    if (Date.now() > until) throw new Error(`page condition not met within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The strongest frequency the page's far-end player (the <audio> element `selector`) plays, from a Web Audio analyser
 *  averaged over 1 s, and its power. */
export function pageTone(page: Page, selector = '#remote'): Promise<{ hz: number; power: number }> {
  return page.evaluate(async (sel) => {
    const stream = (document.querySelector(sel) as HTMLAudioElement).srcObject as MediaStream;
    const ctx = new AudioContext();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 4096;
    ctx.createMediaStreamSource(stream).connect(analyser);
    const bins = new Float32Array(analyser.frequencyBinCount);
    const sum = new Float64Array(bins.length);
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      analyser.getFloatFrequencyData(bins);
      bins.forEach((db, k) => { sum[k] += Math.pow(10, db / 10); });
    }
    let best = 1;
    for (let k = 1; k < sum.length; k++) if (sum[k] > sum[best]) best = k;
    await ctx.close();
    return { hz: (best * ctx.sampleRate) / analyser.fftSize, power: sum[best] / 20 };
  }, selector);
}
