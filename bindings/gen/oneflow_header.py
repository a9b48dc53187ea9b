"""oneflow_c.h as data: the model that every binding's op generator reads.

The header's op section (between "ops" and "end of ops") declares one C function per op, in a few
regular shapes: `of_status_t* of_<op>(of_session_t* session, <arguments>, of_tensor_t** out_tensor)`,
each argument one of the kinds below; an op with several results ends with one `of_tensor_t** out_<name>`
per result instead (`of_tensor_t** out_values, of_tensor_t** out_indices`: Op.outputs names them). parse() reads them into Op values, and the options structs they
take into OptionsStruct values, so that adding an op to the header adds it to every binding. A
declaration in the op section that fits no shape stops the generator with its name (extend the model,
or hand-write that function in each binding and list it in HAND_WRITTEN).

Argument kinds (Arg.kind):
  tensor   `const of_tensor_t* x` (input) or `of_tensor_t* x` (updated in place: Arg.mutable);
           Arg.nullable when marked OF_NULLABLE
  tensors  `const of_tensor_t* const* tensors, size_t n`: a list of tensors
  dims     `const int64_t* dims, size_t ndim`: a list of int64 (dims or sizes)
  int64    `int64_t dim`
  double   `double value`
  bool     `of_bool_t keepdim`
  dtype    `const of_dtype_t* dtype`
  options  `const of_<name>_options_t* options`: Arg.options names the OptionsStruct; nullable
           (NULL = the defaults of of_<name>_options_init) unless the header says otherwise

The options structs (every `typedef struct of_<name>_options_t` of the header, in any section) are read
field by field (Field.kind: integers, flags, doubles, enums, arrays of them, and `const char*` strings);
a field of no known kind stops the generator.

Standard library only; usable as a module or run as `python3 oneflow_header.py HEADER` to print the
model.
"""
from dataclasses import dataclass, field
import re
import sys

# Functions of the op section that are not ops: the registry queries and the options initialisers,
# which each binding wraps by hand (the initialisers behind its options types' defaults).
HAND_WRITTEN = {"of_op_count", "of_op_name"}


@dataclass
class Param:
    ctype: str  # the C type without OF_NULLABLE, spaces normalised: "const of_tensor_t*"
    name: str
    nullable: bool


@dataclass
class Function:
    name: str
    ret: str
    params: list
    section: str  # the header section it is declared in ("ops", "tensors", ...)
    doc: str  # the comment block above its declaration (shared by a group), without comment markers


@dataclass
class Arg:
    kind: str
    name: str
    nullable: bool = False
    mutable: bool = False
    options: str = ""  # kind "options": the OptionsStruct's name ("conv2d")
    count: str = ""  # kinds "tensors" and "dims": the name of the size_t count that follows ("ndims")


@dataclass
class Op:
    c_name: str  # "of_add_scalar"
    name: str  # "add_scalar"
    args: list  # Arg values, session and the out parameters excluded
    doc: str
    outputs: list = field(default_factory=lambda: ["tensor"])  # result names: out_<name> in C

    @property
    def first_tensor(self):
        """The first argument when it is a single tensor (the receiver of a method), else None."""
        return self.args[0] if self.args and self.args[0].kind == "tensor" else None


@dataclass
class Field:
    kind: str  # "int64", "int32", "uint64", "size", "bool", "double", "enum" (ctype names it), or
    #            "string": `const char*`, NUL-terminated UTF-8 borrowed for the call, NULL allowed (the
    #            default of the initialisers; the header says what NULL means for each field)
    ctype: str
    name: str
    count: int  # 1, or the length of an array field ("int64_t stride[2]")
    doc: str


@dataclass
class OptionsStruct:
    c_name: str  # "of_conv2d_options_t"
    name: str  # "conv2d"
    init: str  # "of_conv2d_options_init"
    fields: list  # Field values, struct_size excluded


@dataclass
class Header:
    functions: dict = field(default_factory=dict)  # name -> Function, in header order
    ops: list = field(default_factory=list)
    options: dict = field(default_factory=dict)  # name -> OptionsStruct
    enums: dict = field(default_factory=dict)  # typedef name ("of_reduction_t") -> [(constant, value)]


def _clean_comment(text):
    lines = []
    for line in text.strip()[2:-2].splitlines():
        line = line.strip()
        if line.startswith("*"):
            line = line[1:]
            if line.startswith(" "):
                line = line[1:]
        lines.append(line.rstrip())
    return "\n".join(lines).strip()


def _split_params(text):
    text = " ".join(text.split())
    if text in ("", "void"):
        return []
    params = []
    for p in text.split(","):
        p = p.strip()
        nullable = "OF_NULLABLE" in p
        p = " ".join(p.replace("OF_NULLABLE", " ").split())
        m = re.match(r"(.*?)\s*\b([a-z_][a-z0-9_]*)$", p)
        if not m:
            raise SystemExit(f"oneflow_header: cannot read the parameter '{p}'")
        ctype = re.sub(r"\s*\*", "*", m.group(1)).strip()
        params.append(Param(ctype, m.group(2), nullable))
    return params


_SCALAR_KINDS = {"int64_t": "int64", "double": "double", "of_bool_t": "bool", "const of_dtype_t*": "dtype"}
_FIELD_KINDS = {"int64_t": "int64", "int32_t": "int32", "uint64_t": "uint64", "size_t": "size",
                "of_bool_t": "bool", "double": "double", "const char*": "string"}


def _op(function):
    """The Op of a function of the op section, or None when it is not op-shaped."""
    p = function.params
    n_out = 0
    while n_out < len(p) - 1 and p[-1 - n_out].ctype == "of_tensor_t**" and p[-1 - n_out].name.startswith("out_"):
        n_out += 1
    outputs = [q.name[4:] for q in p[len(p) - n_out:]]
    if (function.ret != "of_status_t*" or len(p) < 2 or p[0].ctype != "of_session_t*" or n_out == 0
            or (n_out == 1 and outputs != ["tensor"]) or "tensor" in outputs[1:]):
        return None
    args, i, inner = [], 0, p[1:-n_out]
    while i < len(inner):
        q = inner[i]
        after = inner[i + 1] if i + 1 < len(inner) else None
        counted = after is not None and after.ctype == "size_t"
        if q.ctype in ("const of_tensor_t*", "of_tensor_t*"):
            args.append(Arg("tensor", q.name, q.nullable, q.ctype == "of_tensor_t*"))
        elif q.ctype == "const of_tensor_t* const*" and counted:
            args.append(Arg("tensors", q.name, count=after.name))
            i += 1
        elif q.ctype == "const int64_t*" and counted:
            args.append(Arg("dims", q.name, count=after.name))
            i += 1
        elif q.ctype in _SCALAR_KINDS:
            args.append(Arg(_SCALAR_KINDS[q.ctype], q.name))
        elif (m := re.fullmatch(r"const of_([a-z0-9_]+)_options_t\*", q.ctype)):
            args.append(Arg("options", q.name, q.nullable, options=m.group(1)))
        else:
            raise SystemExit(f"oneflow_header: {function.name}: no op argument kind for '{q.ctype} {q.name}'")
        i += 1
    return Op(function.name, function.name[3:], args, function.doc, outputs)


def parse(path):
    text = open(path, encoding="utf-8").read()
    header = Header()
    section, doc = "", ""
    # Tokens in order: section banners, comments, OF_API declarations, options structs, enum typedefs.
    token = re.compile(
        r"/\*===--- (?P<section>[A-Za-z: ,]+?) -+===\*/"
        r"|(?P<comment>/\*.*?\*/)"
        r"|^OF_API\s+(?P<decl>[^;]*);"
        r"|typedef struct (?P<struct>of_[a-z0-9_]+_options_t) \{(?P<body>.*?)\} (?P=struct);"
        r"|typedef int32_t (?P<enum>of_[a-z0-9_]+_t);\s*enum [a-z0-9_]+ \{(?P<values>.*?)\};",
        re.S | re.M)
    last_end = 0
    for m in token.finditer(text):
        between = text[last_end:m.start()]
        last_end = m.end()
        if m.group("section"):
            section, doc = m.group("section"), ""
        elif m.group("comment"):
            # A comment after a blank line starts a new doc block; one right after a declaration's
            # line (a trailing comment) is not a doc block.
            if "\n" in between or not doc:
                doc = _clean_comment(m.group("comment"))
        elif m.group("decl"):
            decl = " ".join(m.group("decl").split())
            d = re.fullmatch(r"(.*?)\s*\b(of_[a-z0-9_]+)\s*\((.*)\)", decl)
            if not d:
                raise SystemExit(f"oneflow_header: cannot read the declaration 'OF_API {decl}'")
            ret = re.sub(r"\s*\*", "*", d.group(1)).strip()
            header.functions[d.group(2)] = Function(d.group(2), ret, _split_params(d.group(3)), section, doc)
        elif m.group("struct"):
            header.options[m.group("struct")[3:-10]] = _options(m.group("struct"), m.group("body"))
        elif m.group("enum"):
            values = re.findall(r"(OF_[A-Z0-9_]+)\s*=\s*(-?\d+)", re.sub(r"/\*.*?\*/", "", m.group("values"), flags=re.S))
            header.enums[m.group("enum")] = [(n, int(v)) for n, v in values]
    for f in header.functions.values():
        if f.section != "ops" or f.name in HAND_WRITTEN or f.name.endswith("_options_init"):
            continue
        op = _op(f)
        if op is None:
            raise SystemExit(f"oneflow_header: {f.name} in the op section fits no op shape (see HAND_WRITTEN)")
        header.ops.append(op)
    for op in header.ops:
        for a in op.args:
            if a.kind == "options" and a.options not in header.options:
                raise SystemExit(f"oneflow_header: {op.c_name} takes of_{a.options}_options_t, not declared")
    return header


def _options(c_name, body):
    fields = []
    field = re.compile(r"(?P<ctype>(const\s+)?[a-z0-9_]+(\s*\*)?)\s*\b(?P<name>[a-z0-9_]+)(\[(?P<count>\d+)\])?;"
                       r"\s*(?P<doc>/\*.*?\*/)?", re.S)
    # Every declaration of the body is a field this model reads: one it cannot read stops the generator
    # rather than leaving the field out of every binding.
    declarations = [d.strip() for d in re.sub(r"/\*.*?\*/", " ", body, flags=re.S).split(";") if d.strip()]
    for m in field.finditer(body):
        ctype, name = re.sub(r"\s*\*", "*", " ".join(m.group("ctype").split())), m.group("name")
        if name == "struct_size":
            continue
        kind = _FIELD_KINDS.get(ctype, "enum" if re.fullmatch(r"of_[a-z0-9_]+_t", ctype) else None)
        if kind is None or (kind == "string" and m.group("count")):
            raise SystemExit(f"oneflow_header: {c_name}.{name}: no field kind for '{ctype}'")
        doc = " ".join(_clean_comment(m.group("doc")).split()) if m.group("doc") else ""
        fields.append(Field(kind, ctype, name, int(m.group("count") or 1), doc))
    if len(fields) + 1 != len(declarations):
        read = {f.name for f in fields} | {"struct_size"}
        unread = [d for d in declarations if not any(re.search(rf"\b{n}\b", d) for n in read)]
        raise SystemExit(f"oneflow_header: {c_name}: cannot read the field(s) {unread}")
    name = c_name[3:-10]
    return OptionsStruct(c_name, name, f"of_{name}_options_init", fields)


def enum_prefix(c_typedef, values):
    """The prefix the constants of an enum typedef share, to strip for a language's own scope:
    "OF_FAN_MODE_" for of_fan_mode_t (its name, when every constant starts with it), else the longest
    common prefix that ends with "_" ("OF_STATUS_" for of_status_code_t)."""
    names = [n for n, _ in values]
    own = "OF_" + c_typedef[3:-2].upper() + "_"
    if all(n.startswith(own) and len(n) > len(own) for n in names):
        return own
    prefix = names[0]
    for n in names[1:]:
        while not n.startswith(prefix):
            prefix = prefix[:-1]
    return prefix[: prefix.rfind("_") + 1]


def camel(name, upper_first=False):
    """add_scalar -> addScalar (or AddScalar)."""
    parts = name.split("_")
    s = parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
    return s[:1].upper() + s[1:] if upper_first else s


if __name__ == "__main__":
    h = parse(sys.argv[1])
    for op in h.ops:
        print(op.c_name, [(a.kind, a.name, "?" if a.nullable else "", a.options) for a in op.args], op.outputs)
    for o in h.options.values():
        print(o.c_name, [(f.kind, f.ctype, f.name, f.count) for f in o.fields])
    print(h.enums)
    print(len(h.functions), "functions,", len(h.ops), "ops")
