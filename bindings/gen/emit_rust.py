"""The Rust emitter of gen_ops.py: the `oneflow` crate's generated part (ops.rs, include!d by lib.rs).

It writes, from the header model (oneflow_header.py):
- a newtype per C enum typedef (`of_reduction_t` -> `Reduction(pub i32)` with its constants): open
  sets, since a value the library returns may be newer than this crate;
- a struct per options struct (`of_conv2d_options_t` -> `Conv2dOptions`) with public fields, no
  struct_size, `Default` from the C initialiser at run time, and a conversion to the C struct (a
  `const char*` field is an `Option<String>`, None = NULL; the conversion of a struct with such fields
  keeps the C strings in a Vec the caller holds for the call, and refuses a string with a NUL byte);
- a method on `Tensor` per op whose first argument is a tensor (`x.add(&y)`, the receiver's session
  running it), and a method on `Session` per op whose first argument is a list of tensors (`cat`);
  an op with several results returns them as a tuple (`let (values, indices) = x.topk(...)?`).
The hand-written crate provides what the generated code calls: `check`, `c_string`, `from_c_string`,
`Tensor::from_raw`, `Tensor::raw`, `SessionHandle::raw`, `state::read`/`state::write` (see Note [Tensor
state lock] in lib.rs).
"""
import oneflow_header as oh

RUST_KEYWORDS = {"where", "type", "match", "move", "ref", "box", "fn", "mod", "use", "loop", "in", "as"}
_FIELD_TYPES = {"int64": "i64", "int32": "i32", "uint64": "u64", "size": "usize", "bool": "bool", "double": "f64",
                "string": "Option<String>"}


def type_name(c_typedef):
    """of_reduction_t -> Reduction, of_conv2d_options_t -> Conv2dOptions."""
    return oh.camel(c_typedef[3:-2], upper_first=True)


def method_name(name):
    return name + "_" if name in RUST_KEYWORDS else name


def doc_lines(text, indent):
    out = []
    for line in text.splitlines():
        line = line.strip()  # no leading spaces: rustdoc would read 4 as a code block (a doctest)
        out.append(f"{indent}///{' ' if line else ''}{line}".replace("[", "\\[").replace("]", "\\]"))
    return out


def emit_enum(c_typedef, values):
    name = type_name(c_typedef)
    prefix = oh.enum_prefix(c_typedef, values)
    lines = [f"/// The C `{c_typedef}` values (an open set: a value this crate does not name survives as its",
             "/// number).",
             "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
             f"pub struct {name}(pub i32);", "", f"impl {name} {{"]
    for n, v in values:
        lines.append(f"    /// `{n}`")
        lines.append(f"    pub const {n[len(prefix):]}: {name} = {name}({v});")
    lines += ["}", ""]
    return lines


def field_type(f):
    t = type_name(f.ctype) if f.kind == "enum" else _FIELD_TYPES[f.kind]
    return f"[{t}; {f.count}]" if f.count > 1 else t


def has_strings(o):
    return any(f.kind == "string" for f in o.fields)


def to_c_field(f):
    if f.kind == "string":
        return (f"match &self.{f.name} {{ None => std::ptr::null(), Some(s) => {{ "
                f"strings.push(c_string(\"{f.name}\", s)?); strings[strings.len() - 1].as_ptr() }} }}")
    if f.kind == "enum":
        return f"self.{f.name}.0"
    if f.kind == "bool":
        return f"self.{f.name} as sys::of_bool_t"
    return f"self.{f.name}"


def from_c_field(f):
    if f.kind == "string":
        return f"unsafe {{ from_c_string(c.{f.name}) }}"
    if f.kind == "enum":
        return f"{type_name(f.ctype)}(c.{f.name})"
    if f.kind == "bool":
        return f"c.{f.name} != 0"
    return f"c.{f.name}"


def emit_options(o):
    name = type_name(o.c_name)
    lines = [f"/// The options of `{o.c_name}` (defaults: `{o.init}`).",
             "#[derive(Clone, Debug, PartialEq)]", f"pub struct {name} {{"]
    for f in o.fields:
        if f.doc:
            lines += doc_lines(f.doc, "    ")
        lines.append(f"    pub {f.name}: {field_type(f)},")
    lines += ["}", "", f"impl Default for {name} {{",
              "    /// The library's defaults, read from its initialiser.", "    fn default() -> Self {",
              f"        let c = {name}::c_default();",
              f"        {name} {{ {', '.join(f'{f.name}: {from_c_field(f)}' for f in o.fields)} }}",
              "    }", "}", "", f"impl {name} {{",
              f"    fn c_default() -> sys::{o.c_name} {{",
              f"        // SAFETY: an all-zero {o.c_name} is valid (numbers, null pointers); the initialiser",
              "        // writes every field and struct_size.",
              f"        let mut c: sys::{o.c_name} = unsafe {{ std::mem::zeroed() }};",
              f"        unsafe {{ sys::{o.init}(&mut c) }};", "        c", "    }", "",
    ]
    if has_strings(o):
        lines += ["    /// The C struct; its strings point into `strings`, which must outlive its use (moving",
                  "    /// the Vec keeps them where they are).",
                  f"    pub(crate) fn to_c(&self, strings: &mut Vec<std::ffi::CString>) -> Result<sys::{o.c_name}> {{"]
    else:
        lines += [f"    pub(crate) fn to_c(&self) -> sys::{o.c_name} {{"]
    lines += [f"        let mut c = {name}::c_default();"]
    for f in o.fields:
        lines.append(f"        c.{f.name} = {to_c_field(f)};")
    lines += ["        Ok(c)" if has_strings(o) else "        c", "    }", "}", ""]
    return lines


def emit_op(header, op, receiver):
    """A method: receiver "tensor" (self is the first argument) or "session" (a Session method)."""
    params, prelude, call = [], [], []
    args = op.args[1:] if receiver == "tensor" else op.args
    if receiver == "tensor":
        call.append("self.raw()")
    mutating = any(a.kind == "tensor" and a.mutable for a in op.args)
    for a in args:
        n = method_name(a.name)
        if a.kind == "tensor":
            if a.nullable:
                params.append(f"{n}: Option<&Tensor>")
                cast = "*mut sys::of_tensor_t" if a.mutable else "*const sys::of_tensor_t"
                call.append(f"{n}.map_or(std::ptr::null_mut::<sys::of_tensor_t>() as {cast}, |t| t.raw())")
            else:
                params.append(f"{n}: &Tensor")
                call.append(f"{n}.raw()")
        elif a.kind == "tensors":
            params.append(f"{n}: &[&Tensor]")
            prelude.append(f"        let {n}_raw: Vec<*const sys::of_tensor_t> = {n}.iter().map(|t| t.raw() as *const _).collect();")
            call += [f"{n}_raw.as_ptr()", f"{n}_raw.len()"]
        elif a.kind == "dims":
            params.append(f"{n}: &[i64]")
            call += [f"{n}.as_ptr()", f"{n}.len()"]
        elif a.kind == "int64":
            params.append(f"{n}: i64")
            call.append(n)
        elif a.kind == "double":
            params.append(f"{n}: f64")
            call.append(n)
        elif a.kind == "bool":
            params.append(f"{n}: bool")
            call.append(f"{n} as sys::of_bool_t")
        elif a.kind == "dtype":
            params.append(f"{n}: &DType")
            call.append(f"{n}.raw()")
        elif a.kind == "options":
            t = type_name(f"of_{a.options}_options_t")
            strings = has_strings(header.options[a.options])
            if strings:
                prelude.append(f"        let mut {n}_strings = Vec::new();")
            to_c = f"o.to_c(&mut {n}_strings)" if strings else "o.to_c()"
            if a.nullable:
                params.append(f"{n}: Option<&{t}>")
                prelude.append(f"        let {n}_c = {n}.map(|o| {to_c}){'.transpose()?' if strings else ''};")
                call.append(f"{n}_c.as_ref().map_or(std::ptr::null(), |o| o as *const _)")
            else:
                params.append(f"{n}: &{t}")
                prelude.append(f"        let {n}_c = {to_c.replace('o.', f'{n}.', 1)}{'?' if strings else ''};")
                call.append(f"&{n}_c")
        else:
            raise SystemExit(f"emit_rust: {op.c_name}: argument kind {a.kind}")
    session = "self.session.raw()" if receiver == "tensor" else "self.handle.raw()"
    handle = "self.session.clone()" if receiver == "tensor" else "self.handle.clone()"
    lock = "write" if mutating else "read"
    outs = ["out"] if op.outputs == ["tensor"] else [f"out_{o}" for o in op.outputs]
    if len(outs) == 1:
        returns, doc_returns = "Tensor", []
    else:
        returns = "(" + ", ".join("Tensor" for _ in outs) + ")"
        doc_returns = ["    ///", f"    /// Returns ({', '.join(op.outputs)})."]
    lines = doc_lines(op.doc, "    ") + doc_returns + ["    ///", f"    /// C: `{op.c_name}`."]
    lines += [f"    pub fn {method_name(op.name)}(&self{''.join(', ' + p for p in params)}) -> Result<{returns}> {{"]
    lines += prelude
    lines += [f"        let _state = state::{lock}();"]
    lines += [f"        let mut {o} = std::ptr::null_mut();" for o in outs]
    lines += [f"        // SAFETY: every handle is alive (borrowed for the call), slices are (pointer, length)",
              "        // pairs, and each out pointer receives a new reference that Tensor::from_raw takes over",
              "        // (none is written on failure).",
              f"        check(unsafe {{ sys::{op.c_name}({session}, {', '.join(call + [f'&mut {o}' for o in outs])}) }})?;"]
    wrapped = [f"unsafe {{ Tensor::from_raw({o}, {handle}) }}" for o in outs]
    lines += [f"        Ok({wrapped[0] if len(outs) == 1 else '(' + ', '.join(wrapped) + ')'})", "    }", ""]
    return lines


def emit(header):
    lines = ["// Generated by bindings/gen/gen_ops.py from oneflow_c.h at build time: do not edit.", "",
             "use crate::{check, state, DType, Result, Session, Tensor};", "use oneflow_sys as sys;", ""]
    if any(has_strings(o) for o in header.options.values()):
        lines[-2:-2] = ["use crate::{c_string, from_c_string};"]
    for c_typedef, values in header.enums.items():
        lines += emit_enum(c_typedef, values)
    for o in header.options.values():
        lines += emit_options(o)
    lines += ["/// The ops whose first argument is a tensor, as its methods (generated from the header).", "impl Tensor {"]
    for op in header.ops:
        if op.first_tensor:
            lines += emit_op(header, op, "tensor")
    lines += ["}", "", "/// The ops whose first argument is a list of tensors (generated from the header).", "impl Session {"]
    for op in header.ops:
        if not op.first_tensor:
            if op.args[0].kind != "tensors":
                raise SystemExit(f"emit_rust: {op.c_name}: no receiver for its first argument")
            lines += emit_op(header, op, "session")
    lines += ["}", ""]
    return {"ops.rs": "\n".join(lines)}
