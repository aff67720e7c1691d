"""A small container runtime for the real-programs tier: runs one container of a rendered Pod
spec as the kubelet and a container runtime would, with the programs of this machine standing
in for the image's (docs/testing.md lists what is emulated and why).

- The root filesystem is a fresh directory: the host's /usr (and its /bin, /lib links), /etc
  read-only with a hosts file of our own, a new /tmp, /run and /var, the pgAdmin image's
  /venv and /pgadmin4 (pgAdmin from PyPI, /pgadmin4 writable through an overlay so
  config_distro.py starts empty as in the image), /usr/local as the image lays it out.
- Volumes are mounted at their mountPath with the modes the kubelet gives them: a Secret's
  files get defaultMode (0644 unless set) and, with fsGroup, the group fsGroup and the group
  read bit; a PVC and an emptyDir get the group fsGroup, group rwx and setgid. readOnly
  mounts are read-only.
- The env is resolved as the kubelet does: `$(VAR)` expands only variables defined earlier in
  the list, `$$(VAR)` is a literal, an unresolved reference stays as written; a missing Secret
  or key refuses to start the container (CreateContainerConfigError).
- The process runs chrooted with runAsUser, runAsGroup and supplementary group fsGroup; with
  runAsNonRoot a uid 0 refuses to start, as the kubelet does. With readOnlyRootFilesystem the
  root (its /tmp, /run and /var too, as in an image) is read-only: only volumes are writable.

Every Pod of a scenario shares one network namespace (the caller's): Pod IPs are loopback.
"""

import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(REPO, "target", "real-programs", "venv")
IMAGE_FILES = os.path.join(REPO, "tests", "real", "image")
PG_BIN = "/usr/lib/postgresql/15/bin"

# The pgAdmin image's configuration (its Dockerfile): environment, working directory, entrypoint.
IMAGE_ENV = {
    "PATH": "/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONPATH": "/pgadmin4",
    "HOME": "/",
}
IMAGE_WORKDIR = "/pgadmin4"
IMAGE_ENTRYPOINT = ["/entrypoint.sh"]


class ContainerConfigError(Exception):
    """The kubelet would not start the container."""


def sh(*args):
    subprocess.run(args, check=True)


def resolve_env(env, secrets):
    """The container's environment, resolved as the kubelet resolves it."""
    out = {}
    for item in env or []:
        name = item["name"]
        if "valueFrom" in item:
            ref = item["valueFrom"].get("secretKeyRef")
            if ref is None:
                raise ContainerConfigError(f"{name}: only secretKeyRef is emulated")
            secret = secrets.get(ref["name"])
            if secret is None or ref["key"] not in secret:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(
                    f"couldn't find key {ref['key']} in Secret {ref['name']} for {name}")
            out[name] = secret[ref["key"]]
            continue
        value = item.get("value", "")

        def expand(m):
            if m.group(0).startswith("$$"):
                return m.group(0)[1:]
            var = m.group(1)
            return out[var] if var in out else m.group(0)

        out[name] = re.sub(r"\$\$\([A-Za-z_][A-Za-z0-9_]*\)|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                           expand, value)
    return out


def lay_out_secret(path, data, mode, fs_group):
    os.makedirs(path)
    for key, value in data.items():
        file = os.path.join(path, key)
        with open(file, "w") as f:
            f.write(value)
        if fs_group is not None:
            os.chown(file, 0, fs_group)
            mode |= 0o440
        os.chmod(file, mode)
    os.chmod(path, 0o755)
    if fs_group is not None:
        os.chown(path, 0, fs_group)
        os.chmod(path, 0o2755)


def prepare_shared_dir(path, fs_group):
    """A PVC or emptyDir as the kubelet hands it over with fsGroup."""
    os.makedirs(path, exist_ok=True)
    if fs_group is not None:
        for root, dirs, files in os.walk(path):
            for name in [root] + [os.path.join(root, f) for f in files]:
                os.chown(name, os.stat(name).st_uid, fs_group)
                st = os.stat(name).st_mode
                os.chmod(name, st | 0o060 | (0o2010 if os.path.isdir(name) else 0))


def volume_source(pod_dir, volume, secrets, fs_group):
    """The host directory standing for a volume of the Pod, created once per Pod by
    [`prepare_pod`] in the kubelet's namespace, so every container of the Pod sees the same."""
    name = volume["name"]
    path = os.path.join(pod_dir, "volumes", name)
    if "secret" in volume:
        if not os.path.exists(path):
            src = volume["secret"]
            data = secrets.get(src["secretName"])
            if data is None:
                raise ContainerConfigError(f"secret {src['secretName']} not found")
            items = src.get("items")
            if items:
                data = {i["path"]: data[i["key"]] for i in items}
            lay_out_secret(path, data, src.get("defaultMode", 0o644), fs_group)
        return path
    if "persistentVolumeClaim" in volume:
        # Claims outlive Pods: beside the pods directory, shared by every Pod naming them.
        claims = os.path.join(os.path.dirname(os.path.dirname(pod_dir)), "claims",
                              volume["persistentVolumeClaim"]["claimName"])
        prepare_shared_dir(claims, fs_group)
        return claims
    if "emptyDir" in volume:
        if not os.path.exists(path):
            os.makedirs(path)
            if volume["emptyDir"].get("medium") == "Memory":
                sh("mount", "-t", "tmpfs", "-o", "size=1m,mode=0777", "tmpfs", path)
            os.chmod(path, 0o777)
            prepare_shared_dir(path, fs_group)
        return path
    raise ContainerConfigError(f"volume {name}: kind not emulated")


def prepare_pod(pod_dir, pod, secrets):
    """What the kubelet sets up before the first container: every volume of the Pod."""
    fs_group = (pod.get("securityContext") or {}).get("fsGroup")
    os.makedirs(os.path.join(pod_dir, "volumes"), exist_ok=True)
    for volume in pod.get("volumes", []):
        volume_source(pod_dir, volume, secrets, fs_group)


def build_root(root, layout, read_only):
    """The image's root filesystem, inside the container's own mount namespace."""
    os.makedirs(root)
    sh("mount", "-t", "tmpfs", "tmpfs", root)
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64")):
        os.symlink(target, os.path.join(root, link))
    for d in ("usr", "etc", "dev", "proc", "tmp", "run", "var", "venv", "pgadmin4"):
        os.makedirs(os.path.join(root, d))
    sh("mount", "--rbind", "/usr", f"{root}/usr")
    sh("mount", "--rbind", "/dev", f"{root}/dev")
    sh("mount", "--bind", "/etc", f"{root}/etc")
    sh("mount", "-o", "remount,bind,ro", f"{root}/etc")
    sh("mount", "--bind", layout["hosts"], f"{root}/etc/hosts")
    sh("mount", "-t", "proc", "proc", f"{root}/proc")
    if not read_only:
        for d in ("tmp", "run", "var"):
            sh("mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", f"{root}/{d}")
    sh("mount", "--bind", VENV, f"{root}/venv")
    sh("mount", "-o", "remount,bind,ro", f"{root}/venv")
    # /pgadmin4: pgAdmin's web directory, the image's own files, an empty config_distro.py
    # owned by pgAdmin's user, writable through an overlay.
    pgadmin = os.path.join(VENV, "lib", "python3.11", "site-packages", "pgadmin4")
    upper, work = layout["pgadmin_upper"], layout["pgadmin_work"]
    os.makedirs(upper)
    os.makedirs(work)
    for f in ("run_pgadmin.py", "gunicorn_config.py"):
        shutil.copy(os.path.join(IMAGE_FILES, f), upper)
    with open(os.path.join(upper, "config_distro.py"), "w"):
        pass
    os.chown(os.path.join(upper, "config_distro.py"), 5050, 0)
    os.chmod(os.path.join(upper, "config_distro.py"), 0o664)
    sh("mount", "-t", "overlay", "overlay", "-o",
       f"lowerdir={pgadmin},upperdir={upper},workdir={work}", f"{root}/pgadmin4")
    # /usr/local as the image lays it out: pg_dump and friends per major version, or nothing.
    sh("mount", "-t", "tmpfs", "tmpfs", f"{root}/usr/local")
    for major in layout.get("pgsql_dirs", []):
        d = f"{root}/usr/local/pgsql-{major}"
        os.makedirs(d)
        sh("mount", "--bind", PG_BIN, d)
    if layout.get("hide_usr_bin_pg_dump"):
        sh("mount", "--bind", "/dev/null", f"{root}/usr/bin/pg_dump")
    os.makedirs(f"{root}/var/lib/pgadmin")
    os.chown(f"{root}/var/lib/pgadmin", 5050, 0)


def mount_volumes(root, pod_dir, pod, container, secrets):
    fs_group = (pod.get("securityContext") or {}).get("fsGroup")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for m in container.get("volumeMounts", []):
        volume = volumes.get(m["name"])
        if volume is None:
            raise ContainerConfigError(f"volumeMount {m['name']}: no such volume")
        src = volume_source(pod_dir, volume, secrets, fs_group)
        target = root + m["mountPath"]
        os.makedirs(target, exist_ok=True)
        sh("mount", "--bind", src, target)
        if m.get("readOnly") or "secret" in volume:
            sh("mount", "-o", "remount,bind,ro", target)


def run_in_container(spec_file):
    """Runs as root in a fresh mount namespace: builds the root, then execs the command."""
    with open(spec_file) as f:
        spec = json.load(f)
    pod, container, secrets = spec["pod"], spec["container"], spec["secrets"]
    sh("mount", "--make-rprivate", "/")
    root = spec["root"]
    read_only = ((container.get("securityContext") or {}).get("readOnlyRootFilesystem") is True)
    build_root(root, spec["layout"], read_only)
    mount_volumes(root, spec["pod_dir"], pod, container, secrets)
    env = dict(IMAGE_ENV)
    env.update(resolve_env(container.get("env"), secrets))
    argv = list(container.get("command") or IMAGE_ENTRYPOINT) + list(container.get("args") or [])
    if argv[0] == "/entrypoint.sh":
        # The image's entrypoint, as tests/real/image/entrypoint.sh emulates it.
        shutil.copy(os.path.join(IMAGE_FILES, "entrypoint.sh"), f"{root}/run/entrypoint.sh")
        os.chmod(f"{root}/run/entrypoint.sh", 0o755)
        argv[0] = "/run/entrypoint.sh"
    ctx = pod.get("securityContext") or {}
    uid, gid = ctx.get("runAsUser", 5050), ctx.get("runAsGroup", 0)
    own = container.get("securityContext") or {}
    uid = own.get("runAsUser", uid)
    if own.get("runAsNonRoot", ctx.get("runAsNonRoot")) and uid == 0:
        raise ContainerConfigError("container has runAsNonRoot and image will run as root")
    if read_only:
        # Every mount of the root is in place: the root itself becomes read-only.
        for d in ("", "/pgadmin4", "/usr/local"):
            sh("mount", "-o", "remount,ro", root + d)
    groups = [g for g in [ctx.get("fsGroup")] + list(ctx.get("supplementalGroups", [])) if g is not None]
    os.chroot(root)
    os.chdir(container.get("workingDir", IMAGE_WORKDIR))
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    run_in_container(sys.argv[1])
