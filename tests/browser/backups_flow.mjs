// Backups and pod logs in a real browser: Debian's chromium driven by playwright-core.
//
//   node backups_flow.mjs '{"console": "http://127.0.0.1:PORT", "shots": "DIR", "scheduled": "NAME"}'
//
// alice signs in, follows the Clusters page's link to the Backups (orders' completed backups,
// one from the immediate schedule NAME; billing's failed one with its error; the schedules),
// opens the pod logs of orders' primary; bob is refused those logs by the API server and reads
// why. Each page is kept as a screenshot in DIR. Any failed check throws: exit code 1.
import { check, launch, shot as keep, signIn as signInTo } from './flow_support.mjs';

const args = JSON.parse(process.argv[2]);
const shot = (page, name) => keep(page, args.shots, name);
const signIn = (browser, user) => signInTo(browser, args, user, `backups-${user}`);

const browser = await launch();
try {
  const alice = await signIn(browser, 'alice');
  // The Clusters page links each cluster's last backup to its backups.
  await shot(alice.page, 'backups-0-clusters');
  await alice.page.locator('[data-cluster=orders]').getByRole('link', { name: 'all backups' }).click();
  await alice.page.waitForURL(`${args.console}/backups#cluster-orders`);
  const orders = alice.page.locator('section[data-cluster=orders]');
  const manual = await orders.locator('[data-backup=orders-before-upgrade]').innerText();
  check(manual.includes('completed') && manual.includes('barmanObjectStore'), `manual backup completed: ${manual}`);
  check(/0000000100000000000000[0-9A-F]{2}/.test(manual), `its WAL shown: ${manual}`);
  const fromSchedule = await orders.locator(`[data-backup=${args.scheduled}]`).innerText();
  check(fromSchedule.includes('completed') && fromSchedule.includes('from schedule orders-nightly'),
    `the schedule's backup: ${fromSchedule}`);
  // Newest first: the scheduled one was made after the one by hand.
  const rows = await orders.locator('[data-backup]').evaluateAll((els) => els.map((e) => e.dataset.backup));
  check(rows.indexOf(args.scheduled) < rows.indexOf('orders-before-upgrade'), `newest first: ${rows}`);
  const nightly = await orders.locator('[data-schedule=orders-nightly]').innerText();
  check(nightly.includes('0 0 3 * * *') && nightly.includes('active') && nightly.includes('03:00:00 UTC'),
    `nightly schedule with its next time: ${nightly}`);
  const weekly = await orders.locator('[data-schedule=orders-weekly]').innerText();
  check(weekly.includes('suspended') && weekly.includes('none while suspended'), `weekly suspended: ${weekly}`);
  const facts = await orders.locator('.grid').innerText();
  check(facts.includes('UTC') && !facts.includes('—'), `orders' backup times shown: ${facts}`);
  const billing = await alice.page.locator('section[data-cluster=billing]').innerText();
  check(billing.includes('failed') && billing.includes('cannot proceed with the backup as the cluster has no backup section'),
    `billing's failure in words: ${billing}`);
  await shot(alice.page, 'backups-1-alice');

  // Pod logs: the index of instances, then the primary's log as alice (granted pods/log).
  await alice.page.getByRole('link', { name: 'Pod logs' }).click();
  const index = await alice.page.locator('section[data-cluster=orders]').innerText();
  check(index.includes('orders-1') && index.includes('primary'), `orders' instances: ${index}`);
  await shot(alice.page, 'logs-1-instances');
  await alice.page.getByRole('link', { name: 'orders-1' }).click();
  const log = await alice.page.locator('pre.log').innerText();
  check(log.includes('orders-1') && log.includes('container postgres'), `the sim's log line: ${log}`);
  await shot(alice.page, 'logs-2-alice');
  await alice.context.close();

  // bob may read the clusters and backups but not pods/log: the API server's refusal, in words.
  const bob = await signIn(browser, 'bob');
  await bob.page.goto(`${args.console}/logs/orders-1?lines=100`);
  const refusal = await bob.page.locator('.flash').innerText();
  check(refusal.includes('refused to show these logs to you')
    && refusal.includes('cannot get resource "pods/log"') && refusal.includes('oidc:bob'),
    `bob refused by RBAC: ${refusal}`);
  check((await bob.page.locator('pre.log').count()) === 0, 'no log shown to bob');
  await shot(bob.page, 'logs-3-bob-refused');
  // Not an instance of a shown cluster: 404, and nothing is asked of the API server.
  const other = await bob.page.goto(`${args.console}/logs/kube-apiserver`);
  check(other.status() === 404, `not an instance: ${other.status()}`);
  await bob.context.close();
  process.stdout.write('backups flow: all checks passed\n');
} finally {
  await browser.close();
}
