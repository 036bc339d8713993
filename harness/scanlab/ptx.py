"""Reading a kernel's PTX: which loads read from memory that a pointer parameter points into.

Drill 05's grader uses this to find plain loads of the look-back descriptors. A plain
load of a word other blocks are writing is a data race in the PTX memory model, and
what it does on a GPU changes from run to run: on an H200 the same planted plain load
hung one grading and scanned correctly in the next (the SM's L1 happened to drop the
stale line). Running the kernel can not be relied on to catch it; the compiled code
can: a load of another block's word is strong enough when PTX says so (ld.relaxed or
ld.acquire at GPU or system scope, ld.volatile, ld.mmio; an atom is not a load), and the
cache operators that bypass the L1 (.cg, .cv) are accepted as the older idiom for the
same thing. A .cta or .cluster scope is not enough: another block's store need not be
visible at that scope, and such a load may be served from the SM's L1.

The analysis is a taint walk over one .entry: registers loaded from the parameter,
and every register computed from one of them (moves, conversions, address
arithmetic), hold a pointer into its memory; a load whose address is such a register
reads that memory. A value loaded from the memory is data, not a pointer, and stops
the walk, as do predicates. Loads in non-inlined device functions (.func) are not
followed: the walk misses them rather than guessing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

STRONG = {"volatile", "mmio"}
ORDERED = {"relaxed", "acquire"}
WIDE_SCOPES = {"gpu", "sys"}
UNCACHED_IN_L1 = {"cg", "cv"}
_REGISTER = re.compile(r"%[A-Za-z_][\w$]*")
_ADDRESS = re.compile(r"\[\s*(%[A-Za-z_][\w$]*)\s*(?:[+-][^\]]*)?\]")


@dataclass(frozen=True)
class Load:
    line: int  # 1-based, in the whole PTX text
    text: str  # the instruction, whitespace squeezed
    strong: bool


def entry_body(ptx: str, kernel: str) -> tuple[int, list[str]] | None:
    """(the 1-based line the entry starts at, its lines through the closing brace), or None."""
    lines = ptx.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+{re.escape(kernel)}\s*\(", line):
            depth, seen = 0, False
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                seen = seen or "{" in lines[j]
                if seen and depth <= 0:
                    return i + 1, lines[i:j + 1]
            return i + 1, lines[i:]
    return None


def _statements(body: list[str], first_line: int):
    """(line number, instruction text without predicate or label) for each statement."""
    for offset, raw in enumerate(body):
        code = raw.split("//", 1)[0]
        for part in code.split(";"):
            text = part.strip()
            text = re.sub(r"^\$?[\w$]+:\s*", "", text)  # a label on the same line
            text = re.sub(r"^@!?%\w+\s+", "", text)  # a guard predicate
            if text and not text.startswith((".", "{", "}")):
                yield first_line + offset, " ".join(text.split())


def _split(text: str) -> tuple[str, list[str]]:
    opcode, _, rest = text.partition(" ")
    operands, depth, current = [], 0, ""
    for ch in rest:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            operands.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        operands.append(current.strip())
    return opcode, operands


def _is_load(opcode: str) -> bool:
    return opcode.split(".")[0] in ("ld", "ldu") and ".param" not in opcode and ".local" not in opcode \
        and ".shared" not in opcode and ".const" not in opcode


def loads_through_parameter(ptx: str, kernel: str, index: int) -> list[Load] | None:
    """Every load whose address comes from parameter `index` of `kernel`; None: no such entry."""
    found = entry_body(ptx, kernel)
    if found is None:
        return None
    first_line, body = found
    param = f"{kernel}_param_{index}"
    statements = list(_statements(body, first_line))
    pointers: set[str] = set()  # registers holding a pointer into the parameter's memory
    param_addresses: set[str] = set()  # registers holding the parameter's own address (mov %rd, param)
    changed = True
    while changed:  # loops carry registers around: walk until nothing new is learnt
        changed = False
        for _, text in statements:
            opcode, operands = _split(text)
            if not operands:
                continue
            base = opcode.split(".")[0]
            dest, sources = operands[0], " ".join(operands[1:])
            if not dest.startswith("%") or dest.startswith("%p"):
                continue
            if base == "ld":
                address = _ADDRESS.search(sources)
                if (".param" in opcode and re.search(rf"\[\s*{re.escape(param)}\s*(?:\+\s*0\s*)?\]", sources)) or (
                        address and address.group(1) in param_addresses):
                    changed |= dest not in pointers  # the parameter's value: the pointer itself
                    pointers.add(dest)
                continue
            registers = _REGISTER.findall(sources)
            if (base == "mov" and re.fullmatch(re.escape(param), sources.strip())) or (
                    base in ("mov", "cvta", "add", "cvt") and any(r in param_addresses for r in registers)):
                changed |= dest not in param_addresses  # the parameter's address (large-parameter code)
                param_addresses.add(dest)
                continue
            if base in ("ld", "ldu", "atom", "red", "st", "setp", "call", "prefetch", "bar", "vote", "shfl",
                        "match", "activemask", "tex", "suld", "sust", "cp", "mbarrier", "wgmma"):
                continue  # a loaded or exchanged value is data; these define no pointer
            if any(reg in pointers for reg in registers) and dest not in pointers:
                pointers.add(dest)
                changed = True
    loads = []
    for line, text in statements:
        opcode, operands = _split(text)
        if not _is_load(opcode):
            continue
        address = _ADDRESS.search(" ".join(operands[1:]))
        if address is None or address.group(1) not in pointers:
            continue
        qualifiers = set(opcode.split(".")[1:])
        strong = bool(qualifiers & (STRONG | UNCACHED_IN_L1)) or bool(qualifiers & ORDERED and qualifiers & WIDE_SCOPES)
        loads.append(Load(line, text, strong))
    return loads
