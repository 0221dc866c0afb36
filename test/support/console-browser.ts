import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

/** A deadline for each wait on a page, not a figure: the machine is shared and loaded. */
export const PAGE_WAIT_MS = 60_000;

export interface ConsolePageOptions {
  /** Let the page read and write the clipboard (the sign-in link's copy button). */
  clipboard?: boolean;
  /** What shows the page is signed in (`#who` unless a test waits for more, e.g. a live feed). */
  ready?: string;
}

export interface ConsoleBrowser {
  /** The browser: launched before the file's tests, closed after them. */
  readonly browser: Browser;
  /** A fresh context (its own sessionStorage) with one page; page errors go to `problems`. */
  newPage(url: string, problems: string[], options?: ConsolePageOptions): Promise<Page>;
  /** A page at `url` signed in with `token`, once the console shows who is signed in. */
  signedIn(
    url: string,
    token: string,
    problems: string[],
    options?: ConsolePageOptions,
  ): Promise<Page>;
}

/**
 * Debian's chromium driven by playwright-core (never a downloaded browser), one per test file:
 * launched in `beforeAll`, closed in `afterAll`. `args` are chromium's own switches.
 */
export function useChromium(args: string[] = []): ConsoleBrowser {
  let launched: Browser | undefined;
  beforeAll(async () => {
    launched = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args });
  });
  afterAll(async () => {
    await launched?.close();
  });
  const browser = (): Browser => {
    if (!launched) throw new Error("chromium is not launched (useChromium() runs in beforeAll)");
    return launched;
  };
  const newPage = async (url: string, problems: string[], options: ConsolePageOptions = {}) => {
    const context: BrowserContext = await browser().newContext({
      viewport: { width: 1400, height: 1000 },
    });
    if (options.clipboard)
      await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_WAIT_MS);
    page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
    return page;
  };
  return {
    get browser() {
      return browser();
    },
    newPage,
    async signedIn(url, token, problems, options) {
      const page = await newPage(url, problems, options);
      await page.goto(`${url}/`);
      await page.fill("#token", token);
      await page.click("#sign-in button[type=submit]");
      await page.waitForSelector(options?.ready ?? "#who");
      return page;
    },
  };
}
