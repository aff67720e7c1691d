#!/usr/bin/env python3
"""The import graph of every crate of the workspace: no circle between files, and none
between the top folders of a crate (a folder circle is an import that runs up a layer).

Each Rust file is a node; `a.rs -> b.rs` when `a.rs` names an item that `b.rs` defines
(`use crate::...`, `use super::...`, or an inline `crate::x::y` path). Test code
(`#[cfg(test)]` modules, `tests.rs` files) is left out: tests may reach anywhere.
A module import (`use crate::a::b;`, `use crate::{a, b::c};`) ties no two files but does tie
their top folders, so it counts for the folder check.

Prints every circle with the names that tie it and exits 1 when there is one.
Run: python3 .ci/import-graph.py [--show]
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ["src", "sim/src", "console/src", "evidence-agent/src", "api/src"]
# Crates whose top folders are layers.
LAYERED = ["src", "sim/src", "console/src", "evidence-agent/src", "api/src"]

USE_RE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
INLINE_RE = re.compile(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
CFG_TEST_RE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")


def module_of(crate_dir: Path, file: Path) -> tuple:
    rel = file.relative_to(crate_dir).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        parts = []
    return tuple(parts)


def strip_test_code(text: str) -> tuple:
    """The file without its inline `#[cfg(test)] mod x { .. }` blocks, and the names of
    the test modules it declares as files (`#[cfg(test)] mod x;`)."""
    test_files = set()
    out = text
    for match in list(CFG_TEST_RE.finditer(text))[::-1]:
        name, opener = match.group(1), match.group(2)
        if opener == ";":
            test_files.add(name)
            continue
        depth, i = 0, match.end() - 1
        while i < len(out):
            if out[i] == "{":
                depth += 1
            elif out[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out = out[: match.start()] + out[i + 1 :]
    return out, test_files


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree: str) -> list:
    """`crate::a::{b, c::{d, e}}` -> [crate::a::b, crate::a::c::d, crate::a::c::e]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix, inner = tree[:i], tree[i + 1 : tree.rindex("}")]
                parts, level, start = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                paths = []
                for part in parts:
                    if part:
                        paths.extend(expand_use(prefix + part))
                return paths
            depth += 1
    return [tree] if tree else []


def resolve(path: str, here: tuple, is_dir_module: bool, modules: dict):
    """The file a path names (longest module prefix) and the item name, or None."""
    segments = [s for s in path.split("::") if s]
    base = list(here) if is_dir_module else list(here[:-1]) if here else []
    current = list(here)
    if segments[0] == "crate":
        current, segments = [], segments[1:]
    else:
        current = list(here)
        while segments and segments[0] in ("super", "self"):
            if segments[0] == "super":
                current = base if current == list(here) else current[:-1]
                base = current[:-1]
            segments = segments[1:]
    best = None
    for n in range(len(segments), -1, -1):
        key = tuple(current + segments[:n])
        if key in modules:
            item = segments[n] if n < len(segments) else "self"
            best = (key, item)
            break
    return best


def crate_graph(crate: str):
    crate_dir = ROOT / crate
    files = sorted(p for p in crate_dir.rglob("*.rs"))
    modules, texts, test_modules, module_uses = {}, {}, set(), {}
    for f in files:
        mod = module_of(crate_dir, f)
        modules[mod] = f
        text, tests = strip_test_code(strip_comments(f.read_text()))
        texts[mod] = (text, f.name == "mod.rs" or mod == ())
        for t in tests:
            test_modules.add(mod + (t,))
    test_files = {m for m in modules if any(m[: len(t)] == t for t in test_modules)}
    test_files |= {m for m in modules if m and m[-1] == "tests"}
    edges = {}
    for mod, (text, is_dir) in texts.items():
        if mod in test_files:
            continue
        paths = []
        for use in USE_RE.findall(text):
            paths.extend(expand_use(use))
        paths.extend(INLINE_RE.findall(text))
        for path in paths:
            hit = resolve(path, mod, is_dir, modules)
            if not hit:
                continue
            target, item = hit
            if target == mod or target in test_files:
                continue
            if item == "self":
                # A module import (`use crate::a::b;`) ties the folders, not the files.
                module_uses.setdefault(mod, {}).setdefault(target, set()).add("(module)")
                continue
            edges.setdefault(mod, {}).setdefault(target, set()).add(item)
    return modules, edges, module_uses


def circles(edges: dict) -> list:
    """Tarjan's strongly connected components with more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def folder_edges(modules: dict, edges: dict) -> dict:
    """The same graph between the top folders (and top files) of a crate."""
    top = lambda m: m[0] if m else "lib"
    out = {}
    for a, targets in edges.items():
        for b, items in targets.items():
            if top(a) != top(b):
                pairs = out.setdefault(top(a), {}).setdefault(top(b), set())
                pairs.add(f"{modules[a].name if len(a) < 2 else '/'.join(a)} takes {', '.join(sorted(items))}")
    return out


def main() -> int:
    found = 0
    for crate in CRATES:
        modules, edges, module_uses = crate_graph(crate)
        both = {m: {**module_uses.get(m, {}), **edges.get(m, {})} for m in set(edges) | set(module_uses)}
        folders = folder_edges(modules, both) if crate in LAYERED else {}
        for comp in circles(folders):
            found += 1
            print(f"folder circle in {crate}: {', '.join(comp)}")
            for a in comp:
                for b, why in sorted(folders.get(a, {}).items()):
                    if b in comp:
                        print(f"  {a} -> {b}: {'; '.join(sorted(why)[:3])}")
        for comp in circles(edges):
            found += 1
            names = ", ".join(str(modules[m].relative_to(ROOT)) for m in comp)
            print(f"circle in {crate}: {names}")
            for a in comp:
                for b, items in sorted(edges.get(a, {}).items()):
                    if b in comp:
                        print(f"  {modules[a].relative_to(ROOT)} -> {modules[b].relative_to(ROOT)}: {', '.join(sorted(items))}")
    if found:
        print(f"{found} import circle(s): move the shared item to the file or folder both may import.")
        return 1
    print(f"import graph: no circle between files in {', '.join(CRATES)}, none between top folders in {', '.join(LAYERED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
