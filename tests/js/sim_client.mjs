// The JavaScript Kubernetes client (@kubernetes/client-node, pinned in package.json) against
// the embedded API server, beside the Python one (tests/python/sim_client.py).
//
// Usage: node sim_client.mjs KUBECONFIG NAMESPACE
//
// Each check is an async function; the last line printed is a JSON summary
// {"passed": [...], "failed": {"name": "error", ...}} that the Rust test
// (sim/tests/integration/sim_js.rs) reads.

import * as k8s from '@kubernetes/client-node';

const CHECKS = [];
const check = (name, fn) => CHECKS.push([name, fn]);

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

// The HTTP code and decoded Status of a refused call.
async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    if (e instanceof k8s.ApiException) {
      const body = typeof e.body === 'string' ? JSON.parse(e.body || '{}') : e.body;
      return [e.code, body];
    }
    throw e;
  }
  throw new Error('expected a refusal, the call succeeded');
}

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const strategicPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);

check('list_namespaces', async (c) => {
  const list = await c.core.listNamespace();
  const names = list.items.map((n) => n.metadata.name);
  for (const ns of ['default', 'kube-system', c.ns]) {
    expect(names.includes(ns), `namespace ${ns} listed: ${names}`);
  }
  expect(/^\d+$/.test(list.metadata.resourceVersion), `list version ${list.metadata.resourceVersion}`);
});

check('configmap_crud', async (c) => {
  const namespace = c.ns;
  const created = await c.core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'js-cm', labels: { app: 'js' } }, data: { a: '1' } },
  });
  expect(created.metadata.uid, 'created with a uid');
  const read = await c.core.readNamespacedConfigMap({ name: 'js-cm', namespace });
  expect(read.data.a === '1', `read back ${JSON.stringify(read.data)}`);

  const merged = await c.core.patchNamespacedConfigMap(
    { name: 'js-cm', namespace, body: { data: { b: '2' } } },
    mergePatch,
  );
  expect(merged.data.a === '1' && merged.data.b === '2', `merge patch ${JSON.stringify(merged.data)}`);
  expect(merged.metadata.resourceVersion !== read.metadata.resourceVersion, 'a patch moves the version');

  // The client's default patch type is a JSON patch.
  const jsonPatched = await c.core.patchNamespacedConfigMap({
    name: 'js-cm', namespace, body: [{ op: 'remove', path: '/data/a' }],
  });
  expect(jsonPatched.data.a === undefined && jsonPatched.data.b === '2', `json patch ${JSON.stringify(jsonPatched.data)}`);

  const labelled = await c.core.patchNamespacedConfigMap(
    { name: 'js-cm', namespace, body: { metadata: { labels: { tier: 'x' } } } },
    strategicPatch,
  );
  expect(labelled.metadata.labels.app === 'js' && labelled.metadata.labels.tier === 'x', 'strategic patch keeps labels');

  // A replace with the stale version is a 409 Conflict.
  const stale = { ...read, data: { c: '3' } };
  const [code, status] = await refusal(c.core.replaceNamespacedConfigMap({ name: 'js-cm', namespace, body: stale }));
  expect(code === 409 && status.reason === 'Conflict', `stale replace: ${code} ${JSON.stringify(status)}`);

  const [dupCode, dup] = await refusal(c.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'js-cm' } } }));
  expect(dupCode === 409 && dup.reason === 'AlreadyExists', `duplicate: ${dupCode} ${dup.reason}`);

  const gone = await c.core.deleteNamespacedConfigMap({ name: 'js-cm', namespace });
  expect(gone.kind === 'Status' && gone.status === 'Success', `delete answer ${JSON.stringify(gone)}`);
  const [missing] = await refusal(c.core.readNamespacedConfigMap({ name: 'js-cm', namespace }));
  expect(missing === 404, `read after delete: ${missing}`);
});

check('secret_string_data', async (c) => {
  const namespace = c.ns;
  const s = await c.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: 'js-secret' }, stringData: { password: 'hunter2' } },
  });
  expect(s.type === 'Opaque', `type ${s.type}`);
  expect(s.stringData === undefined, 'stringData is not stored');
  expect(Buffer.from(s.data.password, 'base64').toString() === 'hunter2', `data ${JSON.stringify(s.data)}`);
  const patched = await c.core.patchNamespacedSecret(
    { name: 'js-secret', namespace, body: { stringData: { user: 'app' } } },
    mergePatch,
  );
  expect(Buffer.from(patched.data.user, 'base64').toString() === 'app', 'stringData merged on patch');
  await c.core.deleteNamespacedSecret({ name: 'js-secret', namespace });
});

check('label_and_field_selectors', async (c) => {
  const namespace = c.ns;
  for (const [name, tier] of [['sel-a', 'web'], ['sel-b', 'db']]) {
    await c.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels: { tier } } } });
  }
  const web = await c.core.listNamespacedConfigMap({ namespace, labelSelector: 'tier=web' });
  expect(web.items.map((i) => i.metadata.name).join() === 'sel-a', 'label selector');
  const named = await c.core.listNamespacedConfigMap({ namespace, fieldSelector: 'metadata.name=sel-b' });
  expect(named.items.map((i) => i.metadata.name).join() === 'sel-b', 'field selector');
  const [code, status] = await refusal(c.core.listNamespacedConfigMap({ namespace, fieldSelector: 'spec.foo=bar' }));
  expect(code === 400 && status.message === 'field label not supported: spec.foo', `unknown field label: ${code} ${status.message}`);
});

check('watch_events', async (c) => {
  const namespace = c.ns;
  const list = await c.core.listNamespacedConfigMap({ namespace });
  const events = [];
  let done;
  const finished = new Promise((resolve, reject) => {
    done = { resolve, reject };
  });
  const watch = new k8s.Watch(c.kc);
  const request = await watch.watch(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { resourceVersion: list.metadata.resourceVersion, labelSelector: 'watched=yes' },
    (type, obj) => {
      events.push(`${type} ${obj.metadata.name}`);
      if (type === 'DELETED') done.resolve();
    },
    (err) => {
      if (err) done.reject(err);
    },
  );
  const body = { metadata: { name: 'watched', labels: { watched: 'yes' } }, data: { n: '1' } };
  await c.core.createNamespacedConfigMap({ namespace, body });
  await c.core.patchNamespacedConfigMap({ name: 'watched', namespace, body: { data: { n: '2' } } }, mergePatch);
  await c.core.deleteNamespacedConfigMap({ name: 'watched', namespace });
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`events so far: ${events}`)), 5000));
  try {
    await Promise.race([finished, timeout]);
  } finally {
    request.abort();
  }
  expect(
    events.join(', ') === 'ADDED watched, MODIFIED watched, DELETED watched',
    `events ${events}`,
  );
});

check('custom_objects', async (c) => {
  const namespace = c.ns;
  const group = 'postgresql.cnpg.io';
  const version = 'v1';
  const plural = 'clusters';
  const body = {
    apiVersion: `${group}/${version}`,
    kind: 'Cluster',
    metadata: { name: 'js-pg' },
    spec: { instances: 1 },
  };
  const created = await c.custom.createNamespacedCustomObject({ group, version, namespace, plural, body });
  expect(created.metadata.generation === 1, `generation ${created.metadata.generation}`);
  const read = await c.custom.getNamespacedCustomObject({ group, version, namespace, plural, name: 'js-pg' });
  expect(read.spec.instances === 1, `read ${JSON.stringify(read.spec)}`);
  const patched = await c.custom.patchNamespacedCustomObject(
    { group, version, namespace, plural, name: 'js-pg', body: { spec: { instances: 3 } } },
    mergePatch,
  );
  expect(patched.spec.instances === 3 && patched.metadata.generation === 2, `patched ${JSON.stringify(patched.spec)}`);
  const listed = await c.custom.listNamespacedCustomObject({ group, version, namespace, plural });
  expect(listed.items.map((i) => i.metadata.name).join() === 'js-pg', 'listed');
  // Custom resources take no strategic merge patch, as on a real server.
  const [code] = await refusal(c.custom.patchNamespacedCustomObject(
    { group, version, namespace, plural, name: 'js-pg', body: { spec: { instances: 2 } } },
    strategicPatch,
  ));
  expect(code === 415, `strategic patch of a custom resource: ${code}`);
  await c.custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'js-pg' });
  const [missing] = await refusal(c.custom.getNamespacedCustomObject({ group, version, namespace, plural, name: 'js-pg' }));
  expect(missing === 404, `get after delete: ${missing}`);
});

async function main() {
  const [kubeconfig, ns] = process.argv.slice(2);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const c = {
    kc,
    ns,
    core: kc.makeApiClient(k8s.CoreV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
  };
  const passed = [];
  const failed = {};
  try {
    await c.core.createNamespace({ body: { metadata: { name: ns } } });
  } catch (e) {
    failed.create_namespace = String(e && e.message ? e.message : e);
  }
  if (!failed.create_namespace) {
    for (const [name, fn] of CHECKS) {
      try {
        await fn(c);
        passed.push(name);
      } catch (e) {
        failed[name] = String(e && e.stack ? e.stack : e);
        console.error(`${name}: ${e && e.stack ? e.stack : e}`);
      }
    }
  }
  console.log(JSON.stringify({ passed, failed }));
}

await main();
