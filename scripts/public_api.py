#!/usr/bin/env python3
"""mcp-stack's public API, one item per line, sorted: what `crates/mcp/public-api.txt` holds.

Reads the JSON that rustdoc writes on the nightly toolchain (every feature, as docs.rs builds the
documentation) and prints each public item the crate's root reaches: modules, types with their
public fields and variants, functions and methods with their signatures, traits with their
items, the trait implementations of public types (auto traits included, blanket ones left out),
constants, statics and re-exports. Items behind `#[doc(hidden)]` are not API and are left out, as
rustdoc leaves them out.

    python3 scripts/public_api.py target/doc/mcp.json > crates/mcp/public-api.txt

`scripts/public-api.sh` builds the JSON and compares the listing with the checked-in one.
"""

import json
import sys


class Api:
    def __init__(self, doc):
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.lines = set()
        self.seen = set()
        # First pass (`collecting`): every public path of every item; the second expands each
        # item once, at its canonical path, and lists the others as re-exports of it.
        self.collecting = True
        self.reachable = {}

    def item(self, item_id):
        return self.index.get(str(item_id))

    # -- types -----------------------------------------------------------------------------

    def ty(self, t):
        if t is None:
            return "()"
        if isinstance(t, str):  # "infer"
            return "_"
        (kind, v), = t.items()
        if kind == "resolved_path":
            return self.path(v)
        if kind == "generic":
            return v
        if kind == "primitive":
            return v
        if kind == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if kind == "slice":
            return "[" + self.ty(v) + "]"
        if kind == "array":
            return "[" + self.ty(v["type"]) + "; " + v["len"] + "]"
        if kind == "borrowed_ref":
            lifetime = v.get("lifetime")
            return "&" + (lifetime + " " if lifetime else "") + ("mut " if v["is_mutable"] else "") + self.ty(v["type"])
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "dyn_trait":
            parts = [self.poly(p) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "function_pointer":
            return self.fn_pointer(v)
        if kind == "qualified_path":
            trait = v.get("trait")
            self_type = self.ty(v["self_type"])
            prefix = f"<{self_type} as {self.path(trait)}>" if trait and trait["path"] else self_type
            return prefix + "::" + v["name"] + self.args(v.get("args"))
        return f"<{kind}>"

    def path(self, p):
        return p["path"] + self.args(p.get("args"))

    def args(self, a):
        if not a:
            return ""
        if isinstance(a, str):
            return "(..)"
        (kind, v), = a.items()
        if kind == "angle_bracketed":
            parts = [self.arg(x) for x in v["args"]] + [self.constraint(c) for c in v["constraints"]]
            return "<" + ", ".join(parts) + ">" if parts else ""
        if kind == "parenthesized":
            out = v.get("output")
            return "(" + ", ".join(self.ty(x) for x in v["inputs"]) + ")" + (" -> " + self.ty(out) if out else "")
        return ""

    def arg(self, x):
        if isinstance(x, str):
            return "_"
        (kind, v), = x.items()
        if kind == "type":
            return self.ty(v)
        if kind == "lifetime":
            return v
        if kind == "const":
            return v.get("expr") or "_"
        return "_"

    def constraint(self, c):
        binding = c["binding"]
        (kind, v), = binding.items()
        head = c["name"] + self.args(c.get("args"))
        if kind == "equality":
            value = v["type"] if "type" in v else v.get("constant")
            return head + " = " + (self.ty(value) if "type" in v else str(value))
        return head + ": " + self.bounds(v)

    def poly(self, p):
        params = [g["name"] for g in p.get("generic_params", [])]
        prefix = "for<" + ", ".join(params) + "> " if params else ""
        return prefix + self.path(p["trait"])

    def bound(self, b):
        (kind, v), = b.items()
        if kind == "trait_bound":
            params = [g["name"] for g in v.get("generic_params", [])]
            prefix = "for<" + ", ".join(params) + "> " if params else ""
            modifier = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
            return prefix + modifier + self.path(v["trait"])
        if kind == "outlives":
            return v
        if kind == "use":
            return "use<..>"
        return f"<{kind}>"

    def bounds(self, bs):
        return " + ".join(self.bound(b) for b in bs)

    def fn_pointer(self, v):
        sig = v["sig"]
        inputs = ", ".join(self.ty(t) for _, t in sig["inputs"])
        out = sig.get("output")
        return f"fn({inputs})" + (" -> " + self.ty(out) if out else "")

    def generics(self, g):
        params = []
        for p in g.get("params", []):
            (kind, v), = p["kind"].items()
            if kind == "lifetime":
                params.append(p["name"] + (": " + " + ".join(v["outlives"]) if v.get("outlives") else ""))
            elif kind == "type":
                if v.get("is_synthetic"):
                    continue
                text = p["name"]
                if v.get("bounds"):
                    text += ": " + self.bounds(v["bounds"])
                if v.get("default"):
                    text += " = " + self.ty(v["default"])
                params.append(text)
            elif kind == "const":
                params.append("const " + p["name"] + ": " + self.ty(v["type"]))
        return "<" + ", ".join(params) + ">" if params else ""

    def where(self, g):
        preds = []
        for w in g.get("where_predicates", []):
            (kind, v), = w.items()
            if kind == "bound_predicate":
                preds.append(self.ty(v["type"]) + ": " + self.bounds(v["bounds"]))
            elif kind == "lifetime_predicate":
                preds.append(v["lifetime"] + ": " + " + ".join(v["outlives"]))
            elif kind == "eq_predicate":
                preds.append(self.ty(v["lhs"]) + " = " + json.dumps(v["rhs"]))
        return " where " + ", ".join(preds) if preds else ""

    def signature(self, name, f):
        header = f["header"]
        quals = ("const " if header.get("is_const") else "") + ("async " if header.get("is_async") else "") + (
            "unsafe " if header.get("is_unsafe") else "")
        sig = f["sig"]
        inputs = []
        for arg_name, t in sig["inputs"]:
            if arg_name == "self":
                rendered = self.ty(t)
                inputs.append({"Self": "self", "&Self": "&self", "&mut Self": "&mut self"}.get(rendered, "self: " + rendered))
            else:
                inputs.append(f"{arg_name}: {self.ty(t)}")
        out = sig.get("output")
        return (f"{quals}fn {name}{self.generics(f['generics'])}({', '.join(inputs)})"
                + (" -> " + self.ty(out) if out else "") + self.where(f["generics"]))

    # -- items -----------------------------------------------------------------------------

    def add(self, line):
        self.lines.add(line)

    def walk_module(self, module_id, path):
        module = self.item(module_id)
        if module is None or (module_id, path) in self.seen:
            return
        self.seen.add((module_id, path))
        for child in module["inner"]["module"]["items"]:
            self.walk_item(child, path)

    def canonical(self, item_id):
        """Where an item is expanded: where it is defined, if the public can reach that path,
        else the first of its public paths in sorted order."""
        reachable = self.reachable.get(item_id, set())
        defined = self.paths.get(str(item_id), {}).get("path")
        if defined and "::".join(defined) in reachable:
            return "::".join(defined)
        return min(reachable) if reachable else None

    def walk_item(self, item_id, path, name=None):
        item = self.item(item_id)
        if item is None or item.get("visibility") != "public" and "use" not in item["inner"]:
            return
        (kind, v), = item["inner"].items()
        name = name or item.get("name")
        full = f"{path}::{name}" if name else path
        if kind != "use":
            if self.collecting:
                self.reachable.setdefault(item_id, set()).add(full)
            elif self.canonical(item_id) != full:
                self.add(f"pub use {full} = {self.canonical(item_id)}")
                return
        if kind == "module":
            self.add(f"pub mod {full}")
            self.walk_module(item_id, full)
        elif kind == "use":
            if item.get("visibility") != "public":
                return
            target = v.get("id")
            if v.get("is_glob"):
                target_item = self.item(target) if target is not None else None
                if target_item and "module" in target_item["inner"]:
                    self.walk_module(target, path)
                else:
                    self.add(f"pub use {path}::{v['source']}::*")
            elif target is not None and self.item(target) is not None:
                self.walk_item(target, path, v["name"])
            else:
                self.add(f"pub use {path}::{v['name']} = {v['source']}")
        elif kind == "struct":
            self.add(f"pub struct {full}{self.generics(v['generics'])}{self.where(v['generics'])}")
            self.fields(full, v["kind"])
            self.impls(full, v["impls"])
        elif kind == "union":
            self.add(f"pub union {full}{self.generics(v['generics'])}")
            for field in v["fields"]:
                self.field(full, field)
            self.impls(full, v["impls"])
        elif kind == "enum":
            self.add(f"pub enum {full}{self.generics(v['generics'])}{self.where(v['generics'])}")
            for variant_id in v["variants"]:
                self.variant(full, variant_id)
            self.impls(full, v["impls"])
        elif kind == "function":
            self.add(f"pub {self.signature(full, v)}")
        elif kind == "trait":
            unsafe = "unsafe " if v.get("is_unsafe") else ""
            supertraits = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            self.add(f"pub {unsafe}trait {full}{self.generics(v['generics'])}{supertraits}{self.where(v['generics'])}")
            for member in v["items"]:
                self.member(full, member, in_trait=True)
        elif kind == "type_alias":
            self.add(f"pub type {full}{self.generics(v['generics'])} = {self.ty(v['type'])}")
        elif kind == "constant":
            self.add(f"pub const {full}: {self.ty(v['type'])}")
        elif kind == "static":
            self.add(f"pub static {'mut ' if v.get('is_mutable') else ''}{full}: {self.ty(v['type'])}")
        elif kind == "macro":
            self.add(f"pub macro {full}!")
        elif kind == "proc_macro":
            self.add(f"pub proc_macro {full}!")
        elif kind == "trait_alias":
            self.add(f"pub trait {full} = {self.bounds(v['params'])}")
        else:
            self.add(f"pub {kind} {full}")

    def fields(self, owner, kind):
        if isinstance(kind, str):  # unit
            return
        if "plain" in kind:
            for field in kind["plain"]["fields"]:
                self.field(owner, field)
        elif "tuple" in kind:
            for position, field in enumerate(kind["tuple"]):
                if field is not None:
                    self.field(owner, field, str(position))

    def field(self, owner, field_id, name=None):
        field = self.item(field_id)
        if field is None or field.get("visibility") != "public":
            return
        self.add(f"pub {owner}::{name or field['name']}: {self.ty(field['inner']['struct_field'])}")

    def variant(self, owner, variant_id):
        variant = self.item(variant_id)
        if variant is None:
            return
        full = f"{owner}::{variant['name']}"
        kind = variant["inner"]["variant"]["kind"]
        if kind == "plain":
            self.add(f"pub {full}")
        elif "tuple" in kind:
            types = [self.ty(self.item(f)["inner"]["struct_field"]) if f is not None and self.item(f) else "_" for f in kind["tuple"]]
            self.add(f"pub {full}({', '.join(types)})")
        elif "struct" in kind:
            self.add(f"pub {full} {{ .. }}")
            for field in kind["struct"]["fields"]:
                f = self.item(field)
                if f is not None:
                    self.add(f"pub {full}::{f['name']}: {self.ty(f['inner']['struct_field'])}")

    def member(self, owner, member_id, in_trait=False):
        member = self.item(member_id)
        if member is None or (not in_trait and member.get("visibility") != "public"):
            return
        (kind, v), = member["inner"].items()
        full = f"{owner}::{member['name']}"
        if kind == "function":
            provided = " { .. }" if in_trait and v.get("has_body") else ""
            self.add(f"pub {self.signature(full, v)}{provided}")
        elif kind == "assoc_const":
            self.add(f"pub const {full}: {self.ty(v['type'])}")
        elif kind == "assoc_type":
            bounds = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            value = " = " + self.ty(v["type"]) if v.get("type") else ""
            self.add(f"pub type {full}{bounds}{value}")

    def impls(self, owner, impl_ids):
        for impl_id in impl_ids:
            impl = self.item(impl_id)
            if impl is None:
                continue
            v = impl["inner"]["impl"]
            if v.get("blanket_impl") is not None:
                continue
            trait = v.get("trait")
            if trait is None:
                for member in v["items"]:
                    self.member(owner, member)
                continue
            if v.get("is_synthetic") and trait["path"] not in ("Send", "Sync", "Unpin"):
                continue  # Freeze and the unwind-safety markers: noise, not promises
            negative = "!" if v.get("is_negative") else ""
            unsafe = "unsafe " if v.get("is_unsafe") else ""
            self.add(f"{unsafe}impl{self.generics(v['generics'])} {negative}{self.path(trait)} for {owner}"
                     f"{self.where(v['generics'])}")


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    api = Api(doc)
    root = api.item(doc["root"])
    api.walk_module(doc["root"], root["name"])
    api.collecting, api.lines, api.seen = False, set(), set()
    api.add(f"pub mod {root['name']}")
    api.walk_module(doc["root"], root["name"])
    for line in sorted(api.lines):
        print(line)


if __name__ == "__main__":
    main()
