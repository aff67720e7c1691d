#!/usr/bin/env python3
"""One door for the operator's writes: every create, patch, replace and delete the operator
sends goes through the applier (`children::Applier`), the status writer (`k8s::status`) or the
Event recorder, and the few writes that are not a reconcile's are named here with why.

A write is a call of a kube `Api` write method with its params struct (`PostParams`,
`PatchParams`, `DeleteParams`, or a `params` variable); the pinned delete and adoption
primitives may be called from the applier only. Test code is left out.
Run: python3 .ci/one-door.py
"""

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("graph", ROOT / ".ci" / "import-graph.py")
graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(graph)

# File -> why it may write.
DOORS = {
    "src/children/applier.rs": "the applier",
    "src/children/create.rs": "the applier's create-or-find",
    "src/children/writes.rs": "the applier's single writes",
    "src/k8s/delete.rs": "the pinned delete the applier calls",
    "src/k8s/owner.rs": "the pinned adoption the applier calls",
    "src/k8s/status.rs": "the status writer's one merge patch",
    "src/k8s/events.rs": "the Event recorder",
    "src/k8s/manifests.rs": "installing deploy/ manifests (sim, tests), not a reconcile",
    "src/supervisor/leader.rs": "the leader Lease",
    "src/supervisor/members.rs": "the shard members' Leases",
    "src/actors/shared/refusals.rs": "SelfSubjectAccessReviews (a question, nothing stored)",
    "src/cli/access.rs": "the kubectl plugin, acting as the person who runs it",
}
PRIMITIVES = {"delete_pinned", "add_owner_pinned"}
PRIMITIVE_CALLERS = {"src/children/applier.rs", "src/k8s/delete.rs", "src/k8s/owner.rs", "src/k8s/mod.rs"}

WRITE = re.compile(
    r"\.(create|patch|patch_status|replace|replace_status|delete|delete_collection|"
    r"create_subresource|patch_subresource)\s*\(([^;]*?)\)",
    re.S,
)


def code_of(path: Path) -> str:
    text, _ = graph.strip_test_code(graph.strip_comments(path.read_text()))
    return text


def main() -> int:
    found = []
    for path in sorted((ROOT / "src").rglob("*.rs")):
        rel = str(path.relative_to(ROOT))
        if rel.endswith("tests.rs") or "/tests/" in rel or rel == "src/testing.rs":
            continue
        code = code_of(path)
        for m in WRITE.finditer(code):
            if re.search(r"Params\b|\bparams\b", m.group(2)) and rel not in DOORS:
                line = code[: m.start()].count("\n") + 1
                found.append(f"{rel}:{line}: .{m.group(1)}(...) outside the doors")
        for name in PRIMITIVES:
            if re.search(rf"\b{name}\s*\(", code) and rel not in PRIMITIVE_CALLERS:
                found.append(f"{rel}: calls {name} (only the applier may)")
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} write(s) outside the doors: go through children::Applier "
              "(cx.applier()), the status writer, or name the door in .ci/one-door.py")
        return 1
    print(f"one door: every write in src/ goes through {len(DOORS)} named files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
