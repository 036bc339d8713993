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
followed: the walk misses them rather than guessing. The PTX is the submission's, read
in the grader's process: every step here is linear in its size.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

STRONG = {"volatile", "mmio"}
ORDERED = {"relaxed", "acquire"}
WIDE_SCOPES = {"gpu", "sys"}
UNCACHED_IN_L1 = {"cg", "cv"}
_REGISTER = re.compile(r"%[A-Za-z_][\w$]*")
_ADDRESS = re.compile(r"\[\s*(%[A-Za-z_][\w$]*)\s*(?:[+-][^\]]*)?\]")
# A loaded or exchanged value is data, not a pointer; these define no pointer either.
NO_POINTER_FROM = {"ld", "ldu", "atom", "red", "st", "setp", "call", "prefetch", "bar", "vote", "shfl", "match",
                   "activemask", "tex", "suld", "sust", "cp", "mbarrier", "wgmma"}


@dataclass(frozen=True)
class Load:
    line: int  # 1-based, in the whole PTX text
    text: str  # the instruction, whitespace squeezed
    strong: bool


def entry_body(ptx: str, kernel: str) -> tuple[int, list[str]] | None:
    """(the 1-based line the entry starts at, its lines through the closing brace), or None.
    nvcc closes an entry with a "}" alone at the start of a line."""
    start = re.search(rf"^[ \t]*(?:\.visible\s+|\.weak\s+)?\.entry\s+{re.escape(kernel)}\s*\(", ptx, re.M)
    if start is None:
        return None
    end = re.compile(r"^\}", re.M).search(ptx, ptx.find("{", start.end()) + 1)
    body = ptx[start.start():end.end() if end else len(ptx)]
    return ptx.count("\n", 0, start.start()) + 1, body.splitlines()


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
    param = re.compile(rf"\[\s*{re.escape(f'{kernel}_param_{index}')}\s*\]")
    first_line, body = found
    statements = [(line, *_split(text)) for line, text in _statements(body, first_line)]
    pointers: list[str] = []  # registers holding a pointer into the parameter's memory, a worklist
    users = defaultdict(list)  # register -> the statements that compute a new register from it
    for number, (_, opcode, operands) in enumerate(statements):
        if not operands or not operands[0].startswith("%") or operands[0].startswith("%p"):
            continue  # no register defined (a store, a branch) or a predicate
        base, sources = opcode.split(".")[0], " ".join(operands[1:])
        if base == "ld" and ".param" in opcode and param.search(sources):
            pointers.append(operands[0])
        elif base not in NO_POINTER_FROM:
            for register in set(_REGISTER.findall(sources)):
                users[register].append(number)
    seen = set(pointers)
    while pointers:  # each register enters once: linear in the kernel's size
        for number in users[pointers.pop()]:
            dest = statements[number][2][0]
            if dest not in seen:
                seen.add(dest)
                pointers.append(dest)
    loads = []
    for line, opcode, operands in statements:
        address = _ADDRESS.search(" ".join(operands[1:])) if _is_load(opcode) else None
        if address is None or address.group(1) not in seen:
            continue
        qualifiers = set(opcode.split(".")[1:])
        strong = bool(qualifiers & (STRONG | UNCACHED_IN_L1)) or bool(qualifiers & ORDERED and qualifiers & WIDE_SCOPES)
        loads.append(Load(line, f"{opcode} {', '.join(operands)}", strong))
    return loads
