#!/usr/bin/env python3
"""The header as the three binding generators read it.

SWIG (Java), bindgen (Rust) and cgo (Go) must each take every OF_API function and every OF_* constant
of capi/include/oneflow/oneflow_c.h, and print no warning: a declaration a generator drops silently
would be missing from that language's binding (SWIG 4.1 used to stop at OF_API's attribute, and to
drop of_status_code() and of_dtype_code(), whose names the enum tags shared).

Usage: generators_test.py <include dir> <scratch dir>
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bindings/gen"))
import oneflow_header  # noqa: E402


def declarations(header):
    """(functions, constants): {name: [parameter, ...]} of the OF_API functions (read by the bindings'
    header model, bindings/gen/oneflow_header.py), and the OF_* macro and enum constant names."""
    model = oneflow_header.parse(header)
    functions = {f.name: [f"{p.ctype} {p.name}" for p in f.params] for f in model.functions.values()}
    text = re.sub(r"/\*.*?\*/", " ", open(header, encoding="utf-8").read(), flags=re.S)
    constants = set(re.findall(r"^\s*#define\s+(OF_[A-Z0-9_]+)\s+\S", text, re.M))
    constants |= set(re.findall(r"^\s*(OF_[A-Z0-9_]+)\s*=", text, re.M))
    constants -= {"OF_API", "OF_NULLABLE"}  # annotations, not constants
    return functions, constants


def run(cmd, log, cwd=None, env=None):
    """Runs cmd; returns its output (stdout and stderr), failing the test if it exits non-zero."""
    result = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(log, "w").write(result.stdout)
    if result.returncode != 0:
        print(f"{cmd[0]} failed ({result.returncode}):\n{result.stdout}")
        sys.exit(1)
    return result.stdout


class Report:
    def __init__(self):
        self.ok = True

    def expect(self, generator, kind, wanted, got):
        missing = sorted(set(wanted) - set(got))
        if missing:
            self.ok = False
            print(f"{generator} dropped {len(missing)} {kind} of the header: {', '.join(missing)}")
        else:
            print(f"{generator}: all {len(wanted)} {kind}")

    def quiet(self, generator, output):
        if output.strip():
            self.ok = False
            print(f"{generator} printed (warnings are failures):\n{output}")


def check_swig(include, work, functions, constants, report):
    os.makedirs(f"{work}/java")
    # The memberin typemap: SWIG's default setter of a `const char*` struct field copies and never frees
    # (warning 451). The header's string fields are borrowed for the call, so this bare interface assigns
    # the pointer; the Java binding's own interface gives them owning setters (OF_STRING_FIELD in
    # bindings/java/oneflow.i).
    with open(f"{work}/oneflow.i", "w") as f:
        f.write('%module oneflow\n%{\n#include "oneflow/oneflow_c.h"\n%}\n%include <stdint.i>\n'
                '%typemap(memberin) const char* { $1 = $input; }\n%include "oneflow/oneflow_c.h"\n')
    out = run(["swig", "-java", "-Wall", f"-I{include}", "-outdir", f"{work}/java", "-o", f"{work}/wrap.c",
               f"{work}/oneflow.i"], f"{work}/swig.log")
    report.quiet("swig", out)
    java = "".join(open(f"{work}/java/{n}").read() for n in os.listdir(f"{work}/java"))
    report.expect("swig", "functions", functions, re.findall(r"native [^(]*\b(of_[a-z0-9_]+)\(", java))
    report.expect("swig", "constants", constants, re.findall(r"\b(OF_[A-Z0-9_]+)\b", java))


def check_bindgen(include, work, functions, constants, report):
    # The flags the Rust binding's build script uses: enums as integer constants (an unknown value from C
    # must not be undefined behaviour in Rust), named without their enum's prefix.
    out = run(["bindgen", f"{include}/oneflow/oneflow_c.h", "--allowlist-function", "of_.*", "--allowlist-type",
               "of_.*", "--allowlist-var", "OF_.*", "--default-enum-style", "consts", "--no-prepend-enum-name",
               "--no-layout-tests", "-o",
               f"{work}/bindings.rs", "--", f"-I{include}"], f"{work}/bindgen.log")
    report.quiet("bindgen", out)
    rust = open(f"{work}/bindings.rs").read()
    report.expect("bindgen", "functions", functions, re.findall(r"pub fn (of_[a-z0-9_]+)", rust))
    report.expect("bindgen", "constants", constants, re.findall(r"pub const (OF_[A-Z0-9_]+)", rust))


def zero_argument(param):
    """A Go argument of the right kind for a C parameter: nil for pointers, 0 for numbers."""
    return "nil" if "*" in param or param.startswith("of_deleter_fn") else "0"


def check_cgo(include, work, functions, constants, report):
    # cgo refuses to refer to a C function except by calling it, so the package calls every function
    # (with nil or 0 for each argument) in a function that never runs; `go vet` type-checks the calls
    # against what cgo made of the header, so a declaration cgo cannot use fails to compile.
    lines = ["package ofcheck", "", f"// #cgo CFLAGS: -I{include} -Wall -Werror",
             '// #include "oneflow/oneflow_c.h"', 'import "C"', "", "func neverCalled() {"]
    for name, params in sorted(functions.items()):
        lines.append(f"\tC.{name}({', '.join(zero_argument(p) for p in params)})")
    lines += ["}", "", "var constants = []interface{}{"] + [f"\tC.{c}," for c in sorted(constants)] + ["}", ""]
    os.makedirs(f"{work}/cgo")
    open(f"{work}/cgo/check.go", "w").write("\n".join(lines))
    open(f"{work}/cgo/go.mod", "w").write("module ofcheck\n\ngo 1.19\n")
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOCACHE=f"{work}/gocache", GOPATH=f"{work}/gopath",
               CGO_ENABLED="1")
    out = run(["go", "vet", "./..."], f"{work}/cgo.log", cwd=f"{work}/cgo", env=env)
    report.quiet("cgo", out)
    print(f"cgo: {len(functions)} functions called and {len(constants)} constants read, type-checked")


def main():
    include, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    functions, constants = declarations(f"{include}/oneflow/oneflow_c.h")
    if len(functions) < 100 or "OF_DIM_UNKNOWN" not in constants:
        raise SystemExit(f"read only {len(functions)} functions and {len(constants)} constants from the header")
    report = Report()
    for tool, check in (("swig", check_swig), ("bindgen", check_bindgen), ("go", check_cgo)):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (scripts/install-deps.sh installs it)")
            report.ok = False
            continue
        os.makedirs(f"{work}/{tool}")
        check(include, f"{work}/{tool}", functions, constants, report)
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
