#!/usr/bin/env python3
"""Sizes of the Vulkan structures newer than ash, from the registry.

    layer/gen/newer_struct_sizes.py VK_XML [VIDEO_XML] [--check]

Computes the C layout (LP64: x86_64 and aarch64 Linux) of every structure
with a structure type in VK_XML and writes layer/src/generated/newer_struct_sizes.rs:
the sizes of those ash does not know (so that the layer can copy `pNext`
chains holding them), and, for a unit test, the computed sizes of a sample
of those it does know (checked against ash's own, i.e. rustc's, layout).
The registry it was made from is named in the file's header. Without the
registry at hand (CI), the generated file stays as it is.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "generated", "newer_struct_sizes.rs")
ASH_TABLE = os.path.join(HERE, "..", "src", "generated", "struct_sizes.rs")

SCALARS = {
    "void": None, "char": 1, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2,
    "int32_t": 4, "uint32_t": 4, "float": 4, "int64_t": 8, "uint64_t": 8, "double": 8,
    "size_t": 8, "int": 4,
}


class Registry:
    def __init__(self, paths):
        self.types = {}
        self.consts = {}
        roots = [ET.parse(p).getroot() for p in paths]
        # vk.xml first: its enums and extensions give the structure types.
        self.root = roots[0]
        for root in roots:
            for t in root.iter("type"):
                name = t.get("name") or (t.find("name").text if t.find("name") is not None else None)
                if name:
                    self.types.setdefault(name, t)
            for e in root.iter("enums"):
                if e.get("name") == "API Constants" or e.get("type") == "constants":
                    for c in e.findall("enum"):
                        if c.get("value") is not None:
                            self.consts[c.get("name")] = c.get("value")
                        elif c.get("alias"):
                            self.consts[c.get("name")] = ("alias", c.get("alias"))
        self.stypes = self._stypes()
        # Provisional extensions (beta: their structures change between revisions): left out.
        self.provisional = set()
        for ext in self.root.iter("extension"):
            if ext.get("provisional") == "true":
                for req in ext.iter("require"):
                    for ty in req.findall("type"):
                        self.provisional.add(ty.get("name"))

    def const(self, name):
        v = self.consts[name]
        if isinstance(v, tuple):
            return self.const(v[1])
        v = v.strip("()").replace("U", "").replace("L", "")
        return int(v, 0)

    def _stypes(self):
        values = {}
        root = self.root
        for e in root.iter("enums"):
            if e.get("name") == "VkStructureType":
                for c in e.findall("enum"):
                    if c.get("value"):
                        values[c.get("name")] = int(c.get("value"))
        for ext in list(root.iter("extension")) + list(root.iter("feature")):
            number = ext.get("number")
            for req in ext.iter("require"):
                for c in req.findall("enum"):
                    if c.get("extends") != "VkStructureType" or c.get("alias"):
                        continue
                    if c.get("value"):
                        values[c.get("name")] = int(c.get("value"))
                        continue
                    n = int(c.get("extnumber") or number)
                    v = 1000000000 + (n - 1) * 1000 + int(c.get("offset"))
                    values[c.get("name")] = -v if c.get("dir") == "-" else v
        return values

    def layout(self, name, seen=()):
        """(size, align) of a type, or None where unknown."""
        if name in SCALARS:
            s = SCALARS[name]
            return None if s is None else (s, s)
        t = self.types.get(name)
        if t is None:
            return None
        if t.get("alias"):
            return self.layout(t.get("alias"), seen)
        cat = t.get("category")
        if cat in ("enum",):
            return (4, 4)
        if cat == "bitmask":
            base = t.find("type")
            if base is None:
                return self.layout(t.get("alias"), seen) if t.get("alias") else None
            return self.layout(base.text, seen)
        if cat == "basetype":
            base = t.find("type")
            if base is None:
                return (8, 8) if "typedef struct" in "".join(t.itertext()) else None
            text = "".join(t.itertext())
            if "*" in text:
                return (8, 8)
            return self.layout(base.text, seen)
        if cat == "handle":
            return (8, 8)
        if cat == "funcpointer":
            return (8, 8)
        if cat in ("struct", "union"):
            if name in seen:
                return None
            return self.struct_layout(t, cat == "union", seen + (name,))
        return None  # Std video and platform types (Display, HANDLE, ...): their structures are left out

    @staticmethod
    def member_text(m):
        """The member's C declaration, without its comment."""
        out = m.text or ""
        for c in m:
            if c.tag != "comment":
                out += c.text or ""
            out += c.tail or ""
        return out

    def members(self, t):
        for m in t.findall("member"):
            if m.get("api") and "vulkan" not in m.get("api").split(","):
                continue
            yield m

    def struct_layout(self, t, union, seen):
        size = 0
        align = 1
        bits = None  # (base size, bits used) of an open bitfield unit
        for m in self.members(t):
            ty = m.find("type").text
            text = self.member_text(m)
            tail = m.find("name").tail or ""
            pointer = "*" in text.split(m.find("name").text)[0]
            if pointer:
                l = (8, 8)
            else:
                l = self.layout(ty, seen)
                if l is None:
                    return None
            count = 1
            for dim in re.findall(r"\[([^\]]*)\]", text.split(m.find("name").text, 1)[1]):
                dim = dim.strip()
                count *= int(dim) if dim.isdigit() else self.const(dim)
            bitfield = re.match(r"\s*:\s*(\d+)", tail)
            s, a = l
            if union:
                size = max(size, s * count)
                align = max(align, a)
                continue
            if bitfield:
                nbits = int(bitfield.group(1))
                if bits and bits[0] == s and bits[1] + nbits <= s * 8:
                    bits = (s, bits[1] + nbits)
                    continue
                size = (size + a - 1) // a * a
                size += s
                bits = (s, nbits)
                align = max(align, a)
                continue
            bits = None
            size = (size + a - 1) // a * a
            size += s * count
            align = max(align, a)
        size = (size + align - 1) // align * align
        return (size, align)


def ash_known():
    """The structure types ash's table knows, by name without `VK_STRUCTURE_TYPE_`."""
    return set(re.findall(r"StructureType::(\w+) =>", open(ASH_TABLE).read()))


def render(reg, source):
    known = ash_known()
    newer, checked = [], []
    for name, t in sorted(reg.types.items()):
        if t.get("category") != "struct" or t.get("alias") or name in reg.provisional:
            continue
        first = next(iter(reg.members(t)), None)
        if first is None or first.find("name").text != "sType":
            continue
        stype = first.get("values")
        if not stype or stype not in reg.stypes:
            continue
        l = reg.layout(name)
        if l is None:
            continue
        value = reg.stypes[stype]
        if stype[len("VK_STRUCTURE_TYPE_"):] in known:
            checked.append((value, l[0], name))
        else:
            newer.append((value, l[0], name))
    lines = [
        f"// @generated by layer/gen/newer_struct_sizes.py from {source}; do not edit.",
        "//! The size of every Vulkan structure newer than ash 0.38 the registry above",
        "//! defines (LP64 layout), by its structure type; and, to check the layout",
        "//! computation in a unit test, the sizes it computes for those ash knows.",
        "//! Structures of provisional (beta) extensions are left out.",
        "",
        "/// The size in bytes of the structure whose structure type is `s_type`, for",
        "/// structures ash does not know.",
        "pub fn newer_struct_size(s_type: i32) -> Option<usize> {",
        "    Some(match s_type {",
    ]
    for value, size, name in newer:
        lines.append(f"        {value} => {size}, // {name}")
    lines += [
        "        _ => return None,",
        "    })",
        "}",
        "",
        "/// `(structure type, computed size)` for the structures ash knows.",
        "#[cfg(test)]",
        "pub const CHECKED: &[(i32, usize)] = &[",
    ]
    for value, size, name in checked:
        lines.append(f"    ({value}, {size}), // {name}")
    lines += ["];", ""]
    return "\n".join(lines), len(newer), len(checked)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    reg = Registry(args)
    source = os.environ.get("VK_XML_SOURCE", os.path.basename(args[0]))
    text, n, c = render(reg, source)
    if "--check" in sys.argv:
        old = open(OUT).read() if os.path.exists(OUT) else ""
        sys.exit(0 if old == text else "layer/src/generated/newer_struct_sizes.rs is stale")
    open(OUT, "w").write(text)
    print(f"wrote {OUT}: {n} newer structures, {c} checked against ash")


if __name__ == "__main__":
    main()
