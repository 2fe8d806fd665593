"""The survey behind SPEC.md's D-10 ([state-body-valid]): every single edit of a valid body's
``state`` (drop, add or rename a key, change a value's JSON type, a negative, huge or +1
integer, a shorter or longer list, two sibling objects swapped, a value set to null), re-signed
and loaded into a fresh loader over the same pipeline; what happens at load and at the first
``next()`` is counted. Run by hand (about 10 s):

    .venv/bin/python tests/runs/state_body_survey.py batchspec.reference [out.json]
"""

import collections
import copy
import importlib
import json
import logging
import pathlib
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

from batchspec.conformance.helpers.envelope import body_of, canonical_json, envelope  # noqa: E402
from batchspec.conformance.helpers.pipelines import envelope_after, index_pipeline, make_loader  # noqa: E402

backend = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "batchspec.reference")
root = pathlib.Path(tempfile.mkdtemp())
valid = envelope_after(backend, index_pipeline(root / "saved", 10, 2, "redistribute"), 5)
EXPECTED = [[i] for i in range(5, 10)]
body = body_of(valid)


def paths(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, path + (i,))


def parent_of(state, path):
    node = state
    for p in path[:-1]:
        node = node[p]
    return node


def mutations(state):
    for path, value in paths(state):
        if not path:
            continue
        label = "/".join(map(str, path))

        def edit(fn, name, path=path, label=label):
            s = copy.deepcopy(state)
            fn(parent_of(s, path), path[-1], s)
            return name, label, s

        par = parent_of(state, path)
        if isinstance(par, dict):
            yield edit(lambda p, k, s: p.pop(k), "drop key")
            yield edit(lambda p, k, s: p.__setitem__(k + "_renamed", p.pop(k)), "rename key")
        if isinstance(value, dict):
            yield edit(lambda p, k, s: p[k].__setitem__("zz_extra", 0), "add key")
            yield edit(lambda p, k, s: p.__setitem__(k, list(p[k].values())), "object->list")
            sib = (
                [k2 for k2, v2 in par.items() if k2 != path[-1] and isinstance(v2, dict)]
                if isinstance(par, dict)
                else []
            )
            if sib:

                def swap(p, k, s, o=sib[0]):
                    p[k], p[o] = p[o], p[k]

                yield edit(swap, "swap objects")
        if isinstance(value, list):
            if value:
                yield edit(lambda p, k, s: p[k].pop(), "list shorter")
            yield edit(lambda p, k, s: p[k].append(copy.deepcopy(p[k][-1]) if p[k] else 0), "list longer")
            yield edit(lambda p, k, s: p.__setitem__(k, {}), "list->object")
        if isinstance(value, bool):
            yield edit(lambda p, k, s: p.__setitem__(k, int(p[k])), "bool->int")
        elif isinstance(value, int):
            yield edit(lambda p, k, s: p.__setitem__(k, str(p[k])), "int->str")
            yield edit(lambda p, k, s: p.__setitem__(k, p[k] + 0.5), "int->float")
            yield edit(lambda p, k, s: p.__setitem__(k, -1), "negative int")
            yield edit(lambda p, k, s: p.__setitem__(k, 2**63), "huge int")
            yield edit(lambda p, k, s: p.__setitem__(k, p[k] + 1), "int+1")
            yield edit(lambda p, k, s: p.__setitem__(k, True), "int->bool")
        elif isinstance(value, float):
            yield edit(lambda p, k, s: p.__setitem__(k, str(p[k])), "float->str")
        elif isinstance(value, str):
            yield edit(lambda p, k, s: p.__setitem__(k, 7), "str->int")
            yield edit(lambda p, k, s: p.__setitem__(k, p[k] + "x"), "str changed")
        if value is None:
            yield edit(lambda p, k, s: p.__setitem__(k, 3), "null->int")
        elif not isinstance(value, (dict, list)):
            yield edit(lambda p, k, s: p.__setitem__(k, None), "value->null")


def outcome(state, i):
    data = envelope(canonical_json({**body, "state": state}))
    loader = make_loader(backend, index_pipeline(root / f"l{i}", 10, 2, "redistribute"))
    try:
        loader.load_state_dict({"zephon": data})
    except ValueError as e:
        return "load: ValueError" + (" malformed body" if "malformed body" in str(e) else " (other)")
    except Exception as e:
        return f"load: {type(e).__name__}"
    got = []
    try:
        for b in loader:
            got.append(b)
            if len(got) > 40:
                break
    except Exception as e:
        kind = type(e).__name__
        if isinstance(e, ValueError) and "malformed body" in str(e):
            kind += " malformed body"
        return f"{'next1' if not got else 'later next'}: {kind}"
    finally:
        loader.close()
    if got == EXPECTED:
        return "same stream"
    if not got:
        return "empty stream"
    return "different stream"


table = collections.Counter()
by_kind = collections.defaultdict(collections.Counter)
examples = collections.defaultdict(list)
for i, (name, label, state) in enumerate(mutations(body["state"])):
    if state == body["state"]:
        continue
    o = outcome(state, i)
    table[o] += 1
    by_kind[name][o] += 1
    if len(examples[o]) < 6:
        examples[o].append(f"{name} @ {label}")
total = sum(table.values())
print(f"backend {backend.__name__}: {total} mutations")
for o, n in table.most_common():
    print(f"  {n:5d}  {o}")
print()
for name, c in sorted(by_kind.items()):
    print(f"{name:14s} " + ", ".join(f"{o}: {n}" for o, n in c.most_common()))
print()
for o, ex in examples.items():
    print(o, "e.g.", "; ".join(ex))
json.dump(
    {"table": table, "by_kind": by_kind},
    pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else root / "survey.json").open("w"),
    indent=1,
)
