// What the browser flows share: checks, screenshots, signing in at the test provider, the
// page's flash message.
import { chromium } from 'playwright-core';

export const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function launch() {
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

export async function shot(page, dir, name) {
  await page.screenshot({ path: `${dir}/${name}.png`, fullPage: true });
}

// Signs `user` in from the console's sign-in page through the provider's development login
// (any login, any password) and its consent, back to the console.
export async function signInOn(page, consoleUrl, user) {
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForSelector('input[name=login]');
  await page.fill('input[name=login]', user);
  await page.fill('input[name=password]', 'any');
  await page.click('button[type=submit]');
  await page.waitForLoadState();
  if (!page.url().startsWith(consoleUrl)) {
    await page.click('button[type=submit]');
  }
  await page.waitForURL(`${consoleUrl}/`);
}

// A new browser context (the provider's certificate is signed by the test's own CA), its
// sign-in page kept as `${prefix}-1-sign-in`, and `user` signed in.
export async function signIn(browser, args, user, prefix) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  await page.goto(args.console);
  check(await page.getByRole('link', { name: 'Sign in' }).isVisible(), 'the sign-in page offers to sign in');
  await shot(page, args.shots, `${prefix}-1-sign-in`);
  await signInOn(page, args.console, user);
  return { context, page };
}

export async function flash(page) {
  const el = page.locator('.flash');
  return (await el.count()) ? (await el.first().innerText()) : '';
}
