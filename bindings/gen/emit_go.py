"""The Go emitter of gen_ops.py: oneflow_c.h's ops, options structs and enums as Go code.

emit(header) returns {"ops_gen.go": text}: one file of package oneflow (bindings/go/oneflow) that
uses the hand-written helpers of that package (Tensor.begin/end, tensorArg, tensorsArg, dimsArg,
cBool, Tensor.result, Session.begin/end). It holds:
  - a Go type per typedef'd enum of the header (of_status_code_t -> Code, of_reduction_t -> Reduction,
    ...) with its constants, values taken from the header;
  - a Go struct per options struct (CamelCase fields, no struct_size), NewXOptions() returning the C
    defaults read from of_x_options_init at run time, and the conversion to the C struct per call (a
    `const char*` field is a Go string, "" standing for NULL; the conversion of a struct with such
    fields also returns the func that frees the C strings it made, to call after the C call);
  - a method per op: on *Tensor when the op's first argument is a tensor (x.Add(y)), on *Session
    otherwise (s.Cat(...)), returning (*Tensor, error), or one *Tensor per result before the error
    for an op with several (values, indices, err := x.Topk(...)).
The file is written into the build (or by `go generate`), never committed or edited by hand.
"""

import shutil
import subprocess

GO_KEYWORDS = {
    "break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for", "func",
    "go", "goto", "if", "import", "interface", "map", "package", "range", "return", "select", "struct",
    "switch", "type", "var",
}
# Go's initialisms (golint): parts of C names written in capitals.
INITIALISMS = {"lr": "LR", "sgd": "SGD", "cuda": "CUDA", "id": "ID", "ok": "OK"}
# Special Go names for some enum typedefs (the rest: of_fan_mode_t -> FanMode).
ENUM_TYPE_NAMES = {"of_status_code_t": "Code"}
# Methods of *Tensor and *Session written by hand: an op with one of these names would clash.
HAND_WRITTEN_TENSOR = {
    "Close", "DType", "Dims", "Ndim", "Numel", "NBytes", "IsLazy", "Device", "String", "Bytes",
    "Retain", "Float32s", "Float64s", "Int8s", "Uint8s", "Int16s", "Int32s", "Int64s", "Bools", "Float16Bits",
    "BFloat16Bits", "SetRequiresGrad", "RequiresGrad", "IsLeaf", "Grad", "SetGrad", "Detach", "Backward",
    "InitUniform", "InitNormal", "InitConstant", "InitKaimingUniform", "InitKaimingNormal",
    "InitXavierUniform", "InitXavierNormal", "Session", "Item",
}
HAND_WRITTEN_SESSION = {
    "Close", "ManualSeed", "DimSymbol", "FromData", "Empty", "Zeros", "Ones", "Full", "Rand", "Randn",
    "Arange", "Adopt", "NewGraph", "NewSGD", "NewAdam", "LoadSafetensors",
}


def go_name(c_name, exported=True):
    parts = [p for p in c_name.split("_") if p]
    out = []
    for i, p in enumerate(parts):
        if p in INITIALISMS and (exported or i > 0):
            out.append(INITIALISMS[p])
        elif i == 0 and not exported:
            out.append(p)
        else:
            out.append(p[:1].upper() + p[1:])
    s = "".join(out)
    if not exported and s in GO_KEYWORDS:
        s += "_"
    return s


def enum_type_name(typedef):
    return ENUM_TYPE_NAMES.get(typedef) or go_name(typedef[3:-2])


def _common_prefix(names):
    parts = [n.split("_") for n in names]
    prefix = []
    for column in zip(*parts):
        if len(set(column)) != 1:
            break
        prefix.append(column[0])
    # Keep at least one part of each name.
    if any(len(p) == len(prefix) for p in parts):
        prefix = prefix[:-1]
    return "_".join(prefix) + "_" if prefix else ""


def emit_enums(header, out):
    for typedef, values in header.enums.items():
        go_type = enum_type_name(typedef)
        names = [n for n, _ in values]
        prefix = "OF_" + typedef[3:-2].upper() + "_"
        if not all(n.startswith(prefix) and len(n) > len(prefix) for n in names):
            prefix = _common_prefix(names)
        out.append(f"// {go_type} is {typedef}: the values of the header's enum (append only).")
        out.append(f"type {go_type} int32\n")
        out.append("const (")
        for name, value in values:
            const = go_type + go_name(name[len(prefix):].lower())
            out.append(f"\t{const} {go_type} = {value} // {name}")
        out.append(")\n")
        if typedef in ENUM_TYPE_NAMES:
            continue  # its String method is hand-written
        out.append(f"// String is the constant's name without its prefix; a value the header lacks prints as its number.")
        out.append(f"func (v {go_type}) String() string {{")
        out.append("\tswitch v {")
        for name, value in values:
            out.append(f"\tcase {value}:\n\t\treturn \"{name[len(prefix):]}\"")
        out.append("\t}")
        out.append(f"\treturn fmt.Sprintf(\"{go_type}(%d)\", int32(v))")
        out.append("}\n")


_FIELD_GO = {"int64": "int64", "int32": "int32", "uint64": "uint64", "size": "uint64", "bool": "bool",
             "double": "float64", "string": "string"}
_FIELD_C = {"int64": "C.int64_t", "int32": "C.int32_t", "uint64": "C.uint64_t", "size": "C.size_t",
            "double": "C.double"}


def _c_field(name):
    return "_" + name if name in GO_KEYWORDS else name


def has_strings(o):
    return any(f.kind == "string" for f in o.fields)


def emit_options(header, out):
    for o in header.options.values():
        go_type = go_name(o.name) + "Options"
        out.append(f"// {go_type} is {o.c_name} without struct_size; New{go_type} gives the C defaults.")
        out.append(f"type {go_type} struct {{")
        for f in o.fields:
            t = _FIELD_GO.get(f.kind)
            if f.kind == "enum":
                t = enum_type_name(f.ctype) if f.ctype in header.enums else "int32"
            if f.count > 1:
                t = f"[{f.count}]{t}"
            doc = f" // {f.doc}" if f.doc else ""
            out.append(f"\t{go_name(f.name)} {t}{doc}")
        out.append("}\n")
        out.append(f"// New{go_type} returns the defaults of {o.init}, read from the library.")
        out.append(f"func New{go_type}() *{go_type} {{")
        out.append(f"\tvar c C.{o.c_name}")
        out.append(f"\tC.{o.init}(&c)")
        out.append(f"\to := &{go_type}{{}}")
        for f in o.fields:
            gf, cf = go_name(f.name), _c_field(f.name)
            idx = [f"[{i}]" for i in range(f.count)] if f.count > 1 else [""]
            for i in idx:
                if f.kind == "bool":
                    out.append(f"\to.{gf}{i} = c.{cf}{i} != 0")
                elif f.kind == "string":
                    out.append(f"\to.{gf}{i} = C.GoString(c.{cf}{i})")
                elif f.kind == "enum":
                    t = enum_type_name(f.ctype) if f.ctype in header.enums else "int32"
                    out.append(f"\to.{gf}{i} = {t}(c.{cf}{i})")
                else:
                    out.append(f"\to.{gf}{i} = {_FIELD_GO[f.kind]}(c.{cf}{i})")
        out.append("\treturn o")
        out.append("}\n")
        strings = has_strings(o)
        out.append(f"// cOptions fills *c from o (struct_size set by {o.init}) and returns c; nil for a nil o.")
        if strings:
            out.append("// The strings are C copies (\"\" is NULL), freed by the returned func once the call is done.")
            out.append(f"func (o *{go_type}) cOptions(c *C.{o.c_name}) (*C.{o.c_name}, func()) {{")
            out.append("\tif o == nil {\n\t\treturn nil, func() {}\n\t}")
            out.append("\tvar made []unsafe.Pointer")
        else:
            out.append(f"func (o *{go_type}) cOptions(c *C.{o.c_name}) *C.{o.c_name} {{")
            out.append("\tif o == nil {\n\t\treturn nil\n\t}")
        out.append(f"\tC.{o.init}(c)")
        for f in o.fields:
            gf, cf = go_name(f.name), _c_field(f.name)
            idx = [f"[{i}]" for i in range(f.count)] if f.count > 1 else [""]
            for i in idx:
                if f.kind == "bool":
                    out.append(f"\tc.{cf}{i} = cBool(o.{gf}{i})")
                elif f.kind == "string":
                    out.append(f"\tif o.{gf}{i} != \"\" {{")
                    out.append(f"\t\tc.{cf}{i} = C.CString(o.{gf}{i})")
                    out.append(f"\t\tmade = append(made, unsafe.Pointer(c.{cf}{i}))")
                    out.append("\t}")
                elif f.kind == "enum":
                    out.append(f"\tc.{cf}{i} = C.{f.ctype}(o.{gf}{i})")
                else:
                    out.append(f"\tc.{cf}{i} = {_FIELD_C[f.kind]}(o.{gf}{i})")
        if strings:
            out.append("\treturn c, func() {\n\t\tfor _, p := range made {\n\t\t\tC.free(p)\n\t\t}\n\t}")
        else:
            out.append("\treturn c")
        out.append("}\n")


def _doc_lines(text):
    return ["// " + line if line else "//" for line in text.splitlines()]


def emit_op(op, header, out):
    method = go_name(op.name)
    recv = op.first_tensor
    on_tensor = recv is not None
    names = {}
    for a in op.args:
        n = go_name(a.name, exported=False)
        if n in ("s", "c", "out", "st", "err", "sess"):
            n += "Arg"
        names[a.name] = n
    if on_tensor:
        if method in HAND_WRITTEN_TENSOR:
            raise SystemExit(f"emit_go: op {op.c_name} clashes with the hand-written Tensor.{method}")
    elif method in HAND_WRITTEN_SESSION:
        raise SystemExit(f"emit_go: op {op.c_name} clashes with the hand-written Session.{method}")
    params = []
    for a in op.args[1 if on_tensor else 0:]:
        n = names[a.name]
        t = {"tensor": "*Tensor", "tensors": "[]*Tensor", "dims": "[]int64", "int64": "int64",
             "double": "float64", "bool": "bool", "dtype": "*DType"}.get(a.kind)
        if a.kind == "options":
            t = "*" + go_name(a.options) + "Options"
        params.append(f"{n} {t}")
    what = f'"{op.name}"'
    out.append(f"// {method} runs {op.c_name}" + (" on the receiver." if on_tensor else " on the session."))
    nullable = [names[a.name] for a in op.args if a.nullable and a.kind in ("tensor", "options")]
    if nullable:
        out.append(f"// nil for {', '.join(nullable)} passes NULL (as the header says below).")
    out.append("//")
    out.extend(_doc_lines(op.doc))
    n_out = len(op.outputs)
    results = "(" + "*Tensor, " * n_out + "error)"
    fail = "\tif err != nil {\n\t\treturn " + "nil, " * n_out + "err\n\t}"
    if n_out > 1:
        out.append(f"// It returns the results {', '.join(op.outputs)}, in that order.")
    if on_tensor:
        r = names[recv.name]
        out.append(f"func ({r} *Tensor) {method}({', '.join(params)}) {results} {{")
        out.append(f"\tsess, err := {r}.begin({what})")
        out.append(fail)
        out.append(f"\tdefer {r}.end()")
        owner = r
    else:
        out.append(f"func (s *Session) {method}({', '.join(params)}) {results} {{")
        out.append(f"\tsess, err := s.begin({what})")
        out.append(fail)
        out.append("\tdefer s.end()")
        owner = "s"
    call = ["sess.ptr"]
    keep = [owner]
    for a in op.args:
        n = names[a.name]
        if on_tensor and a is recv:
            call.append(f"{n}.ptr")
            continue
        if a.kind == "tensor":
            out.append(f"\tc{n}, err := tensorArg({what}, \"{a.name}\", {n})")
            out.append(fail)
            out.append(f"\tdefer {n}.endArg()")
            cast = "(*C.of_tensor_t)" if a.mutable else ""
            call.append(f"{cast}(c{n})" if cast else f"c{n}")
            keep.append(n)
        elif a.kind == "tensors":
            out.append(f"\tc{n}, err := tensorsArg({what}, \"{a.name}\", {n})")
            out.append(fail)
            out.append(f"\tdefer endTensors({n})")
            out.append(f"\tvar p{n} **C.of_tensor_t")
            out.append(f"\tif len(c{n}) > 0 {{\n\t\tp{n} = &c{n}[0]\n\t}}")
            call.append(f"(**C.of_tensor_t)(unsafe.Pointer(p{n}))")
            call.append(f"C.size_t(len(c{n}))")
            keep.append(n)
        elif a.kind == "dims":
            call.append(f"dimsArg({n})")
            call.append(f"C.size_t(len({n}))")
            keep.append(n)
        elif a.kind == "int64":
            call.append(f"C.int64_t({n})")
        elif a.kind == "double":
            call.append(f"C.double({n})")
        elif a.kind == "bool":
            call.append(f"cBool({n})")
        elif a.kind == "dtype":
            call.append(f"{n}.cptr()")
        elif a.kind == "options":
            out.append(f"\tvar o{n} C.of_{a.options}_options_t")
            if has_strings(header.options[a.options]):
                out.append(f"\tc{n}, free{n} := {n}.cOptions(&o{n})")
                out.append(f"\tdefer free{n}()")
                call.append(f"c{n}")
            else:
                call.append(f"{n}.cOptions(&o{n})")
        else:
            raise SystemExit(f"emit_go: {op.c_name}: no Go mapping for argument kind {a.kind}")
    outs = ["out"] if n_out == 1 else [f"out{go_name(o)}" for o in op.outputs]
    out.append(f"\tvar {', '.join(outs)} *C.of_tensor_t")
    args = ", ".join(call + [f"&{o}" for o in outs])
    out.append(f"\tst := C.{op.c_name}({args})")
    for k in keep:
        out.append(f"\truntime.KeepAlive({k})")
    if n_out == 1:
        out.append(f"\treturn sess.tensorResult(st, out)")
    else:
        out.append("\tif err := statusError(st); err != nil {\n\t\treturn " + "nil, " * n_out + "err\n\t}")
        out.append("\treturn " + ", ".join(f"newTensor(sess, {o})" for o in outs) + ", nil")
    out.append("}\n")


def emit(header):
    out = [
        "// Code generated by bindings/gen/gen_ops.py go from oneflow_c.h. DO NOT EDIT.",
        "",
        "package oneflow",
        "",
        "/*",
        "#include <stdlib.h>",
        "#include <oneflow/oneflow_c.h>",
        "*/",
        'import "C"',
        "",
        "import (",
        '\t"fmt"',
        '\t"runtime"',
        '\t"unsafe"',
        ")",
        "",
        "var _ = unsafe.Pointer(nil)",
        "var _ = fmt.Sprint",
        "",
    ]
    emit_enums(header, out)
    emit_options(header, out)
    for op in header.ops:
        emit_op(op, header, out)
    out.append("// generatedOps lists the C functions behind the generated op methods, in header order.")
    out.append("var generatedOps = []string{")
    for op in header.ops:
        out.append(f'\t"{op.c_name}",')
    out.append("}")
    return {"ops_gen.go": _gofmt("\n".join(out) + "\n")}


def _gofmt(text):
    """The text as gofmt prints it, when gofmt is installed (it comes with go); else as it is."""
    gofmt = shutil.which("gofmt")
    if gofmt is None:
        return text
    done = subprocess.run([gofmt], input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"emit_go: gofmt rejects the generated code:\n{done.stderr}")
    return done.stdout
