"""The official Python `kubernetes` client against the embedded API server.

Usage: python3 sim_client.py KUBECONFIG NAMESPACE

Each check is a function; the last line printed is a JSON summary
{"passed": [...], "failed": {"name": "error", ...}} that the Rust test reads.
"""

import json
import sys
import traceback

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def text(e):
    return e.body.decode() if isinstance(e.body, bytes) else e.body


def raw(api, method, path, body=None, content_type="application/json", accept="application/json", query=None):
    """A request with our own headers; returns the decoded JSON answer."""
    resp = api.call_api(
        path, method,
        query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": accept},
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    return json.loads(resp.data or b"{}")


class Ctx:
    def __init__(self, kubeconfig, ns):
        self.api = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.ns = ns


def cm(name, data=None, labels=None, finalizers=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels, finalizers=finalizers),
        data=data or {},
    )


def deployment_body(name, containers):
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": containers}}},
    }


@check
def crud(c):
    created = c.core.create_namespaced_config_map(c.ns, cm("crud", {"a": "1"}))
    expect(created.metadata.uid, "uid assigned")
    got = c.core.read_namespaced_config_map("crud", c.ns)
    expect(got.data == {"a": "1"}, f"read back {got.data}")
    got.data["a"] = "2"
    replaced = c.core.replace_namespaced_config_map("crud", c.ns, got)
    expect(replaced.data["a"] == "2", "replaced")
    expect(int(replaced.metadata.resource_version) > int(created.metadata.resource_version), "rv grows")
    stale = cm("crud", {"a": "3"})
    stale.metadata.resource_version = created.metadata.resource_version
    try:
        c.core.replace_namespaced_config_map("crud", c.ns, stale)
        raise AssertionError("stale replace accepted")
    except ApiException as e:
        expect(e.status == 409, f"stale replace answered {e.status}")
    try:
        c.core.create_namespaced_config_map(c.ns, cm("crud"))
        raise AssertionError("duplicate create accepted")
    except ApiException as e:
        expect(e.status == 409 and json.loads(text(e))["reason"] == "AlreadyExists", text(e))
    status = c.core.delete_namespaced_config_map("crud", c.ns)
    expect(isinstance(status, client.V1Status) and status.status == "Success", f"delete answered {status}")
    expect(status.details.uid == created.metadata.uid, "Status names the uid")
    try:
        c.core.read_namespaced_config_map("crud", c.ns)
        raise AssertionError("still there")
    except ApiException as e:
        expect(e.status == 404, f"read after delete {e.status}")


@check
def defaults(c):
    body = deployment_body("defaults", [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}])
    d = c.apps.create_namespaced_deployment(c.ns, body)
    expect(d.spec.replicas == 1, "replicas")
    expect(d.spec.strategy.type == "RollingUpdate", "strategy")
    expect(d.spec.strategy.rolling_update.max_surge == "25%", "maxSurge")
    expect(d.spec.revision_history_limit == 10, "revisionHistoryLimit")
    expect(d.spec.progress_deadline_seconds == 600, "progressDeadlineSeconds")
    pod = d.spec.template.spec
    expect(pod.restart_policy == "Always" and pod.dns_policy == "ClusterFirst", "pod spec defaults")
    expect(pod.scheduler_name == "default-scheduler" and pod.termination_grace_period_seconds == 30, "scheduler/grace")
    ctr = pod.containers[0]
    expect(ctr.image_pull_policy == "IfNotPresent", ctr.image_pull_policy)
    expect(ctr.termination_message_path == "/dev/termination-log", "terminationMessagePath")
    expect(ctr.ports[0].protocol == "TCP", "port protocol")
    secret = c.core.create_namespaced_secret(c.ns, client.V1Secret(
        metadata=client.V1ObjectMeta(name="defaults"), string_data={"password": "hunter2"}))
    expect(secret.type == "Opaque", f"secret type {secret.type}")
    expect(secret.string_data is None, "stringData not stored")
    expect(secret.data == {"password": "aHVudGVyMg=="}, f"data {secret.data}")
    svc = c.core.create_namespaced_service(c.ns, client.V1Service(
        metadata=client.V1ObjectMeta(name="defaults"),
        spec=client.V1ServiceSpec(selector={"app": "x"}, ports=[client.V1ServicePort(port=5432)])))
    expect(svc.spec.type == "ClusterIP" and svc.spec.session_affinity == "None", "service type/affinity")
    expect(svc.spec.ports[0].protocol == "TCP" and svc.spec.ports[0].target_port == 5432, "service port")
    try:
        c.apps.create_namespaced_deployment(c.ns, {**deployment_body("bad", [{"name": "c", "image": "x"}]),
                                                   "spec": {"selector": {"matchLabels": {"app": "other"}},
                                                            "template": {"metadata": {"labels": {"app": "bad"}},
                                                                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        raise AssertionError("selector mismatch accepted")
    except ApiException as e:
        expect(e.status == 422 and "does not match template" in text(e), text(e))
    c.core.create_namespaced_config_map(c.ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="frozen"), data={"a": "1"}, immutable=True))
    try:
        c.core.patch_namespaced_config_map("frozen", c.ns, {"data": {"a": "2"}})
        raise AssertionError("immutable ConfigMap changed")
    except ApiException as e:
        expect(e.status == 422 and "field is immutable when `immutable` is set" in text(e), text(e))


@check
def selectors(c):
    for i, tier in enumerate(["web", "web", "db"]):
        c.core.create_namespaced_config_map(c.ns, cm(f"sel-{i}", labels={"tier": tier, "sel": "yes"}))
    web = c.core.list_namespaced_config_map(c.ns, label_selector="sel=yes,tier=web")
    expect(sorted(x.metadata.name for x in web.items) == ["sel-0", "sel-1"], "equality selector")
    not_web = c.core.list_namespaced_config_map(c.ns, label_selector="sel,tier notin (web)")
    expect([x.metadata.name for x in not_web.items] == ["sel-2"], "set selector")
    named = c.core.list_namespaced_config_map(c.ns, field_selector="metadata.name=sel-1")
    expect([x.metadata.name for x in named.items] == ["sel-1"], "field selector")
    everywhere = c.core.list_config_map_for_all_namespaces(label_selector="sel=yes")
    expect(len(everywhere.items) == 3, "cluster-wide list")


@check
def paging(c):
    for i in range(5):
        c.core.create_namespaced_config_map(c.ns, cm(f"page-{i}", labels={"paging": "yes"}))
    names, token, pages = [], None, 0
    while True:
        page = c.core.list_namespaced_config_map(c.ns, label_selector="paging=yes", limit=2, _continue=token)
        pages += 1
        names += [x.metadata.name for x in page.items]
        token = page.metadata._continue
        if pages == 1:
            expect(page.metadata.remaining_item_count == 3, f"remaining {page.metadata.remaining_item_count}")
        if not token:
            break
    expect(pages == 3 and names == [f"page-{i}" for i in range(5)], f"{pages} pages: {names}")


@check
def watch_with_bookmarks(c):
    start = c.core.list_namespaced_config_map(c.ns).metadata.resource_version
    c.core.create_namespaced_config_map(c.ns, cm("watched", {"a": "1"}))
    c.core.patch_namespaced_config_map("watched", c.ns, {"data": {"a": "2"}})
    c.core.delete_namespaced_config_map("watched", c.ns)
    seen = []
    w = watch.Watch()
    for event in w.stream(c.core.list_namespaced_config_map, c.ns, resource_version=start,
                          allow_watch_bookmarks=True, timeout_seconds=2):
        kind = event["type"]
        name = event["object"].metadata.name if kind != "BOOKMARK" else None
        seen.append((kind, name))
    expect(seen[:3] == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")], f"events {seen}")
    expect(("BOOKMARK", None) in seen, f"no bookmark in {seen}")
    expect(w.resource_version is not None, "watch follows the bookmark's resourceVersion")
    # The sim's fault endpoint makes the next watch's version too old, as after a compaction.
    raw(c.api, "POST", "/_sim/watches/gone", {})
    try:
        list(watch.Watch().stream(c.core.list_namespaced_config_map, c.ns, resource_version=start,
                                  timeout_seconds=1))
        raise AssertionError("a too old resourceVersion was accepted")
    except ApiException as e:
        expect(e.status == 410, f"expired watch answered {e.status}")


@check
def patch_types(c):
    c.core.create_namespaced_config_map(c.ns, cm("patched", {"a": "1"}))
    path = f"/api/v1/namespaces/{c.ns}/configmaps/patched"
    # A dict goes as a strategic merge patch, a list as a JSON patch.
    c.core.patch_namespaced_config_map("patched", c.ns, {"data": {"b": "2"}})
    c.core.patch_namespaced_config_map("patched", c.ns, [{"op": "add", "path": "/data/c", "value": "3"}])
    raw(c.api, "PATCH", path, {"data": {"a": None}}, "application/merge-patch+json")
    applied = raw(c.api, "PATCH", path,
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "patched"}, "data": {"d": "4"}},
                  "application/apply-patch+yaml", query=[("fieldManager", "python"), ("force", "true")])
    expect(applied["data"] == {"b": "2", "c": "3", "d": "4"}, f"after four patches {applied['data']}")
    try:
        c.core.patch_namespaced_config_map("patched", c.ns, [{"op": "test", "path": "/data/b", "value": "9"}])
        raise AssertionError("failed JSON patch test accepted")
    except ApiException as e:
        expect(e.status == 422, f"failed test answered {e.status}")


@check
def server_side_apply_two_managers(c):
    dyn = dynamic.DynamicClient(c.api)
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    a = deployment_body("ssa", [{"name": "web", "image": "nginx:1.27"}])
    deployments.server_side_apply(body=a, namespace=c.ns, field_manager="team-a")
    b = deployment_body("ssa", [{"name": "log", "image": "busybox:1.36"}])
    deployments.server_side_apply(body=b, namespace=c.ns, field_manager="team-b")
    deployments.server_side_apply(body=a, namespace=c.ns, field_manager="team-a")
    live = deployments.get(name="ssa", namespace=c.ns)
    names = [x["name"] for x in live.spec.template.spec.containers]
    expect(names == ["web", "log"], f"containers {names}")
    managers = sorted(m["manager"] for m in live.metadata.managedFields)
    expect(managers == ["team-a", "team-b"], f"managers {managers}")
    try:
        deployments.server_side_apply(body=deployment_body("ssa", [{"name": "web", "image": "nginx:2"}]),
                                      namespace=c.ns, field_manager="team-b")
        raise AssertionError("conflicting apply accepted")
    except ApiException as e:
        expect(e.status == 409 and "Apply failed with 1 conflict" in text(e), text(e))
    c.core.create_namespaced_config_map(c.ns, cm("ua"))
    entries = c.core.read_namespaced_config_map("ua", c.ns).metadata.managed_fields or []
    expect([m.manager for m in entries] == ["OpenAPI-Generator"], "manager from the User-Agent")


@check
def deletion_options(c):
    owner = c.core.create_namespaced_config_map(c.ns, cm("owner"))
    ref = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    dep = cm("dependent")
    dep.metadata.owner_references = [ref]
    c.core.create_namespaced_config_map(c.ns, dep)
    try:
        c.core.delete_namespaced_config_map("owner", c.ns, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="not-the-uid")))
        raise AssertionError("precondition ignored")
    except ApiException as e:
        expect(e.status == 409, f"precondition answered {e.status}")
    c.core.delete_namespaced_config_map("owner", c.ns, propagation_policy="Orphan", grace_period_seconds=0)
    left = c.core.read_namespaced_config_map("dependent", c.ns)
    expect(not left.metadata.owner_references, "orphaned dependent keeps living without its reference")
    owner = c.core.create_namespaced_config_map(c.ns, cm("owner2"))
    dep = cm("dependent2")
    dep.metadata.owner_references = [client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner2", uid=owner.metadata.uid)]
    c.core.create_namespaced_config_map(c.ns, dep)
    c.core.delete_namespaced_config_map("owner2", c.ns, body=client.V1DeleteOptions(propagation_policy="Background"))
    gone = [x.metadata.name for x in c.core.list_namespaced_config_map(c.ns).items]
    expect("dependent2" not in gone, "background deletion collects the dependent")
    dry = c.core.create_namespaced_config_map(c.ns, cm("dry"), dry_run="All")
    expect(dry.metadata.name == "dry", "dry-run answer")
    names = [x.metadata.name for x in c.core.list_namespaced_config_map(c.ns).items]
    expect("dry" not in names, "dry run stored nothing")


@check
def finalizers(c):
    c.core.create_namespaced_config_map(c.ns, cm("held", finalizers=["example.com/hold"]))
    answer = c.core.delete_namespaced_config_map("held", c.ns)
    held = c.core.read_namespaced_config_map("held", c.ns)
    expect(held.metadata.deletion_timestamp is not None, "deletionTimestamp set")
    expect(answer is not None, "delete answered")
    try:
        c.core.patch_namespaced_config_map("held", c.ns, {"metadata": {"finalizers": ["example.com/hold", "x.io/more"]}})
        raise AssertionError("new finalizer on a deleted object accepted")
    except ApiException as e:
        expect(e.status == 422, f"adding a finalizer answered {e.status}")
    c.core.patch_namespaced_config_map("held", c.ns, {"metadata": {"finalizers": None}})
    try:
        c.core.read_namespaced_config_map("held", c.ns)
        raise AssertionError("still there after its last finalizer")
    except ApiException as e:
        expect(e.status == 404, f"read answered {e.status}")


@check
def discovery(c):
    groups = client.ApisApi(c.api).get_api_versions()
    names = [g.name for g in groups.groups]
    for g in ["apps", "batch", "postgresql.cnpg.io", "route.openshift.io"]:
        expect(g in names, f"group {g} missing from {names}")
    core = client.CoreApi(c.api).get_api_versions()
    expect(core.versions == ["v1"], f"core versions {core.versions}")
    res = client.AppsV1Api(c.api).get_api_resources()
    deploy = next(r for r in res.resources if r.name == "deployments")
    expect(deploy.kind == "Deployment" and deploy.namespaced and "deploy" in deploy.short_names, "deployments")
    expect(any(r.name == "deployments/status" for r in res.resources), "status subresource listed")
    version = client.VersionApi(c.api).get_code()
    expect(version.major == "1", f"version {version.major}")


@check
def dynamic_client(c):
    dyn = dynamic.DynamicClient(c.api)
    clusters = dyn.resources.get(api_version="postgresql.cnpg.io/v1", kind="Cluster")
    clusters.create(namespace=c.ns, body={"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                                          "metadata": {"name": "pg"}, "spec": {"instances": 1}})
    got = clusters.get(name="pg", namespace=c.ns)
    expect(got.spec.instances == 1, "custom resource read back")
    clusters.patch(name="pg", namespace=c.ns, body={"spec": {"instances": 2}},
                   content_type="application/merge-patch+json")
    listed = clusters.get(namespace=c.ns)
    expect([x.metadata.name for x in listed.items] == ["pg"], "custom resource listed")
    expect(listed.items[0].spec.instances == 2, "merge patch applied")
    clusters.delete(name="pg", namespace=c.ns)
    try:
        clusters.get(name="pg", namespace=c.ns)
        raise AssertionError("custom resource still there")
    except ApiException as e:
        expect(e.status == 404, f"get answered {e.status}")
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(namespace=c.ns, body={"metadata": {"name": "dyn"}, "data": {"k": "v"}})
    expect(cms.get(name="dyn", namespace=c.ns).data.k == "v", "core kind through the dynamic client")


@check
def tables(c):
    c.core.create_namespaced_config_map(c.ns, cm("tabled", {"a": "1", "b": "2"}))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = raw(c.api, "GET", f"/api/v1/namespaces/{c.ns}/configmaps", accept=accept)
    expect(table["kind"] == "Table", f"kind {table.get('kind')}")
    columns = [col["name"] for col in table["columnDefinitions"]]
    expect(columns[:3] == ["Name", "Data", "Age"], f"columns {columns}")
    row = next(r for r in table["rows"] if r["cells"][0] == "tabled")
    expect(row["cells"][1] == 2, f"cells {row['cells']}")
    expect(row["object"]["kind"] == "PartialObjectMetadata", "rows carry metadata")
    deployments = raw(c.api, "GET", f"/apis/apps/v1/namespaces/{c.ns}/deployments", accept=accept)
    columns = [col["name"] for col in deployments["columnDefinitions"] if col["priority"] == 0]
    expect(columns == ["Name", "Ready", "Up-to-date", "Available", "Age"], f"deployment columns {columns}")


@check
def no_op_replace(c):
    """A replace of the object as read, by the same field manager, stores nothing: the
    resourceVersion stays and no watch event is sent (kube-apiserver's storage skips a write
    whose bytes did not change)."""
    c.core.create_namespaced_config_map(c.ns, cm("unchanged", {"a": "1"}), field_manager="py")
    read = c.core.read_namespaced_config_map("unchanged", c.ns)
    replaced = c.core.replace_namespaced_config_map("unchanged", c.ns, read, field_manager="py")
    expect(
        replaced.metadata.resource_version == read.metadata.resource_version,
        f"version {read.metadata.resource_version} -> {replaced.metadata.resource_version}",
    )
    events = watch.Watch().stream(
        c.core.list_namespaced_config_map, c.ns,
        field_selector="metadata.name=unchanged",
        resource_version=read.metadata.resource_version, timeout_seconds=1,
    )
    seen = [(e["type"], e["object"].metadata.resource_version) for e in events]
    expect(seen == [], f"events after the no-op replace: {seen}")


def main():
    kubeconfig, ns = sys.argv[1], sys.argv[2]
    c = Ctx(kubeconfig, ns)
    c.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    passed, failed = [], {}
    for fn in CHECKS:
        try:
            fn(c)
            passed.append(fn.__name__)
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            failed[fn.__name__] = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
    print(json.dumps({"passed": passed, "failed": failed}))


if __name__ == "__main__":
    main()
