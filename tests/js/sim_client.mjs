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
  // ConfigMaps have no field label conversion of their own: the default one answers, naming the
  // labels it supports.
  const wanted = '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"';
  expect(code === 400 && status.message === wanted, `unknown field label: ${code} ${status.message}`);
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

// A plain request to the server (the sim's kubeconfig carries no credentials: the admin).
async function rawJson(c, path, headers = {}) {
  const res = await fetch(`${c.kc.getCurrentCluster().server}${path}`, { headers });
  return [res.status, await res.json()];
}

check('invalid_name_message', async (c) => {
  const [code, status] = await refusal(c.core.createNamespacedConfigMap({
    namespace: c.ns, body: { metadata: { name: 'Bad_Name' } },
  }));
  const want = 'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
    + "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
    + "alphanumeric character (e.g. 'example.com', regex used for validation is "
    + "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  expect(code === 422 && status.reason === 'Invalid', `code ${code} ${status.reason}`);
  expect(status.message === want, `message ${status.message}`);
});

check('watch_from_a_compacted_version', async (c) => {
  // Version 1 is older than anything the server's history holds (it starts after start-up).
  const seen = [];
  let finished;
  const done = new Promise((resolve, reject) => {
    finished = { resolve, reject };
  });
  const request = await new k8s.Watch(c.kc).watch(
    `/api/v1/namespaces/${c.ns}/configmaps`,
    { resourceVersion: '1' },
    (type, obj) => seen.push([type, obj]),
    (err) => (err ? finished.reject(err) : finished.resolve()),
  );
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the watch stayed open; events ${JSON.stringify(seen)}`)), 5000);
  });
  try {
    await Promise.race([done, timeout]);
  } finally {
    clearTimeout(timer);
    request.abort();
  }
  expect(seen.length === 1, `events ${JSON.stringify(seen)}`);
  const [type, status] = seen[0];
  expect(type === 'ERROR' && status.kind === 'Status' && status.code === 410 && status.reason === 'Expired',
    `error event ${JSON.stringify(seen[0])}`);
  expect(/^too old resource version: 1 \(\d+\)$/.test(status.message), `message ${status.message}`);
});

check('continue_from_a_compacted_version', async (c) => {
  const token = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 1, start: 'a\u0000' })).toString('base64url');
  const [code, status] = await refusal(c.core.listNamespacedConfigMap({ namespace: c.ns, limit: 1, _continue: token }));
  expect(code === 410 && status.reason === 'Expired', `code ${code} ${JSON.stringify(status)}`);
  expect(status.message.startsWith('The provided continue parameter is too old to display a consistent list result.'),
    `message ${status.message}`);
});

check('lease_micro_time', async (c) => {
  const coordination = c.kc.makeApiClient(k8s.CoordinationV1Api);
  await coordination.createNamespacedLease({
    namespace: c.ns,
    body: { metadata: { name: 'js-lease' }, spec: { holderIdentity: 'js', renewTime: new Date('2026-01-02T03:04:05.123Z') } },
  });
  const [code, raw] = await rawJson(c, `/apis/coordination.k8s.io/v1/namespaces/${c.ns}/leases/js-lease`);
  expect(code === 200 && raw.spec.renewTime === '2026-01-02T03:04:05.123000Z', `renewTime ${JSON.stringify(raw.spec)}`);
});

check('access_review_reasons', async (c) => {
  const rbac = c.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const authz = c.kc.makeApiClient(k8s.AuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: c.ns,
    body: { metadata: { name: 'reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: c.ns,
    body: {
      metadata: { name: 'alice-reads' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
    },
  });
  const review = (verb) => authz.createSubjectAccessReview({
    body: { spec: { user: 'alice', resourceAttributes: { namespace: c.ns, verb, resource: 'configmaps' } } },
  });
  const allowed = await review('get');
  const want = `RBAC: allowed by RoleBinding "alice-reads/${c.ns}" of Role "reader" to User "alice"`;
  expect(allowed.status.allowed === true && allowed.status.reason === want, `allowed ${JSON.stringify(allowed.status)}`);
  const denied = await review('delete');
  expect(denied.status.allowed === false && !denied.status.reason, `denied ${JSON.stringify(denied.status)}`);
  // system:masters passes before RBAC, which gives no reason.
  const self = await authz.createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: { namespace: c.ns, verb: 'get', resource: 'configmaps' } } },
  });
  expect(self.status.allowed === true && !self.status.reason, `admin ${JSON.stringify(self.status)}`);
});

check('self_subject_review_of_a_service_account', async (c) => {
  const sa = await c.core.createNamespacedServiceAccount({ namespace: c.ns, body: { metadata: { name: 'js-sa' } } });
  const issued = await c.core.createNamespacedServiceAccountToken({ name: 'js-sa', namespace: c.ns, body: { spec: {} } });
  const kc = new k8s.KubeConfig();
  const cluster = c.kc.getCurrentCluster();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'js-sa', token: issued.status.token }],
    contexts: [{ name: 'js-sa', cluster: cluster.name, user: 'js-sa' }],
    currentContext: 'js-sa',
  });
  const review = await kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
  const info = review.status.userInfo;
  expect(info.username === `system:serviceaccount:${c.ns}:js-sa`, `username ${info.username}`);
  expect(info.uid === sa.metadata.uid, `uid ${info.uid}, want ${sa.metadata.uid}`);
  const credential = (info.extra || {})['authentication.kubernetes.io/credential-id'] || [];
  expect(credential.length === 1 && /^JTI=.+/.test(credential[0]), `extra ${JSON.stringify(info.extra)}`);
});

check('namespace_finalizer_and_termination', async (c) => {
  const ns = `${c.ns}-gone`;
  const created = await c.core.createNamespace({ body: { metadata: { name: ns } } });
  expect(JSON.stringify(created.spec.finalizers) === '["kubernetes"]', `spec ${JSON.stringify(created.spec)}`);
  await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'held', finalizers: ['example.com/hold'] } } });
  await c.core.deleteNamespace({ name: ns });
  const terminating = await c.core.readNamespace({ name: ns });
  expect(terminating.status.phase === 'Terminating', `phase ${terminating.status.phase}`);
  expect(JSON.stringify(terminating.spec.finalizers) === '["kubernetes"]', `spec while terminating ${JSON.stringify(terminating.spec)}`);
  const remaining = (terminating.status.conditions || []).find((x) => x.type === 'NamespaceFinalizersRemaining');
  expect(remaining && remaining.status === 'True' && remaining.reason === 'SomeFinalizerRemain', `conditions ${JSON.stringify(terminating.status.conditions)}`);
  await c.core.patchNamespacedConfigMap({ name: 'held', namespace: ns, body: { metadata: { finalizers: null } } }, mergePatch);
  const [gone] = await refusal(c.core.readNamespace({ name: ns }));
  expect(gone === 404, `namespace after its content went: ${gone}`);
});

check('service_account_token_volume', async (c) => {
  const pod = await c.core.createNamespacedPod({
    namespace: c.ns,
    body: { metadata: { name: 'js-pod' }, spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] } },
  });
  const volumes = pod.spec.volumes || [];
  expect(volumes.length === 1 && /^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/.test(volumes[0].name),
    `volumes ${JSON.stringify(volumes)}`);
  const sources = volumes[0].projected.sources;
  expect(sources[0].serviceAccountToken.path === 'token' && sources[0].serviceAccountToken.expirationSeconds === 3607,
    `token source ${JSON.stringify(sources[0])}`);
  expect(sources[1].configMap.name === 'kube-root-ca.crt', `ca source ${JSON.stringify(sources[1])}`);
  expect(sources[2].downwardAPI.items[0].fieldRef.fieldPath === 'metadata.namespace', `namespace source ${JSON.stringify(sources[2])}`);
  const mounts = pod.spec.containers[0].volumeMounts || [];
  expect(mounts.length === 1 && mounts[0].name === volumes[0].name && mounts[0].readOnly === true
    && mounts[0].mountPath === '/var/run/secrets/kubernetes.io/serviceaccount', `mounts ${JSON.stringify(mounts)}`);
  const opted = await c.core.createNamespacedPod({
    namespace: c.ns,
    body: {
      metadata: { name: 'js-pod-no-token' },
      spec: { automountServiceAccountToken: false, containers: [{ name: 'app', image: 'busybox:1.36' }] },
    },
  });
  expect(!opted.spec.volumes && !opted.spec.containers[0].volumeMounts, `opted out ${JSON.stringify(opted.spec)}`);
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
