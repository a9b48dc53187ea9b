#!/usr/bin/env python3
"""java.coverage: every of_* function of oneflow_c.h is used by the Java binding's idiomatic layer.

Usage: coverage_test.py HEADER SRC_DIR GENERATED_OPS_DIR
The idiomatic layer is the hand-written classes (SRC_DIR) and the op methods and options classes
generated from the header (GENERATED_OPS_DIR); a function counts as used when that code calls
OneflowC.<name>(. Also checks that every call of a function returning of_status_t* goes through
Status.check (so no failing status is dropped or leaked).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gen"))
import oneflow_header  # noqa: E402

# Called only inside Status.check, which turns every failing status into an exception: they are used,
# but listed so that the reason is written down. (Status.check lives in SRC_DIR, so they are found
# anyway; the list must stay short and each entry reasoned.)
EXCLUDED = {
    "of_status_code": "read by Status.check",
    "of_status_message": "read by Status.check",
    "of_status_destroy": "called by Status.check for every failing status",
}


def java_sources(*dirs):
    text = {}
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith(".java"):
                    p = os.path.join(root, f)
                    text[p] = open(p, encoding="utf-8").read()
    return text


def main():
    header, src, gen = sys.argv[1:4]
    model = oneflow_header.parse(header)
    sources = java_sources(src, gen)
    code = "\n".join(sources.values())
    called = set(re.findall(r"OneflowC\.(of_[a-z0-9_]+)\(", code))
    missing = [f for f in model.functions if f not in called and f not in EXCLUDED]
    ok = True
    if missing:
        ok = False
        print(f"not used by the Java layer ({len(missing)}): {', '.join(missing)}")
    stale = [f for f in EXCLUDED if f not in model.functions]
    if stale:
        ok = False
        print(f"exclusions naming no function of the header: {', '.join(stale)}")
    # Every status-returning call is checked.
    status_fns = {n for n, f in model.functions.items() if f.ret == "of_status_t*"}
    unchecked = []
    for path, text in sources.items():
        for m in re.finditer(r"OneflowC\.(of_[a-z0-9_]+)\(", text):
            if m.group(1) in status_fns:
                before = text[max(0, m.start() - 40):m.start()]
                if not re.search(r"Status\.check\(\s*(org\.oneflow\.jni\.)?$", before) and "f.call(" not in before:
                    # Session.create passes lambdas whose result Status.check receives (f.call).
                    line = text.count("\n", 0, m.start()) + 1
                    if not re.search(r"->\s*$", before):
                        unchecked.append(f"{os.path.basename(path)}:{line} {m.group(1)}")
    if unchecked:
        ok = False
        print("status results not passed to Status.check:\n  " + "\n  ".join(unchecked))
    print(f"{len(model.functions)} functions in the header; {len(called & set(model.functions))} called from the "
          f"Java layer; {len(EXCLUDED)} listed as internal ({', '.join(EXCLUDED)})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
