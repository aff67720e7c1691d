// What the browser flows share: checks, screenshots, and signing in through the test's
// OpenID provider (its development login form: any login, any password).
import { chromium } from 'playwright-core';

const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

export async function shot(page, dir, name) {
  await page.screenshot({ path: `${dir}/${name}.png`, fullPage: true });
}

export async function launch() {
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

// A new browser context signed in to the console at `console` as `user`, on the Clusters page.
export async function signIn(browser, console, user) {
  // The provider's certificate is signed by the test's own CA.
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  await page.goto(console);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForSelector('input[name=login]');
  await page.fill('input[name=login]', user);
  await page.fill('input[name=password]', 'any');
  await page.click('button[type=submit]');
  // Consent to the scopes, then back to the console.
  await page.waitForLoadState();
  if (!page.url().startsWith(console)) {
    await page.click('button[type=submit]');
  }
  await page.waitForURL(`${console}/`);
  return { context, page };
}
