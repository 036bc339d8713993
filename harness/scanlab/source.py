"""Reading the lesson programs' kernels as tokens, so that two copies can be compared.

Two tests hold a kernel to another copy of itself: the HIP port against the CUDA file
(test_a05_hip.py), and each traced twin (day31-scan/trace.cu, a05-scan/cuda/trace.cu,
a05-scan/hip/trace.cpp) against its lesson (test_trace.py). Both compare whitespace-split
tokens with comments and strings removed, so layout and comments may differ and nothing
else may. `built_from_base` makes a corpus entry kept as edits of an answer (drill 05's).
"""

from __future__ import annotations

import re

# A twin's added lines end in this comment; nothing else in a twin may differ from its lesson.
TRACE_MARK = re.compile(r"//\s*trace\s*$")


def strip_comments_and_strings(code: str) -> str:
    """Comments removed (block comments keep their line breaks), every string and character
    literal made empty."""
    def blank(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith("//"):
            return ""
        if text.startswith("/*"):
            return re.sub(r"[^\n]", " ", text)
        return '""'
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, code, flags=re.S)


def device_code(source: str) -> str:
    """The GPU-kernel section (between the '// ---- GPU kernels' and the first
    '// ---- host side' banners), comments and strings removed."""
    start = source.index("// ---- GPU kernels")
    end = source.index("// ---- host side", start)
    outside = strip_comments_and_strings(source[:start] + source[end:])
    assert not re.search(r"__global__|__device__", outside), "a kernel outside the GPU-kernels section"
    return strip_comments_and_strings(source[start:end])


def without_trace_lines(source: str) -> str:
    """`source` less every line that ends in the `// trace` mark."""
    return "\n".join(line for line in source.split("\n") if not TRACE_MARK.search(line))


_FUNCTION = re.compile(r"^(?:template\s*<[^>]*>\s*\n)?[ \t]*(?:__global__|__device__)\b[^;{]*?\b(\w+)\s*\(", re.M)


def device_functions(code: str) -> dict[str, list[str]]:
    """Each __global__ or __device__ function of `code` (comments already removed), by name:
    its tokens from the `template` line or the qualifier to the closing brace."""
    found: dict[str, list[str]] = {}
    for m in _FUNCTION.finditer(code):
        brace = code.find("{", m.end())
        if brace < 0 or ";" in code[m.end():brace].split(")")[-1]:
            continue  # a declaration, not a definition
        depth, at = 0, brace
        while True:
            depth += {"{": 1, "}": -1}.get(code[at], 0)
            if depth == 0:
                break
            at += 1
        name = m.group(1)
        assert name not in found, f"{name} is defined twice"
        found[name] = code[m.start():at + 1].split()
    return found


def built_from_base(edits: str, base: str) -> str:
    """An entry kept as edits of an answer (manifest `base`): the entry's header (its lines before the
    first "@@ replace"), a blank line, then the base below its own header comment with each
    "@@ replace / @@ with / @@ end" edit made in turn; each replaced text must stand in the base
    exactly once (ValueError otherwise), so an answer that changes under an edit fails loudly.
    Used by test_corpus.py and bench-class.py."""
    lines = edits.split("\n")
    first = lines.index("@@ replace")
    body = base.split("\n")
    while body and body[0].startswith("//"):
        body.pop(0)
    text, at = "\n".join(body), first
    while at < len(lines) and lines[at] == "@@ replace":
        mid, end = lines.index("@@ with", at), lines.index("@@ end", at)
        old, new = "\n".join(lines[at + 1:mid]), "\n".join(lines[mid + 1:end])
        if text.count(old) != 1:
            raise ValueError(f"the edit at line {at + 1} finds its text {text.count(old)} times: {old[:80]!r}")
        text, at = text.replace(old, new, 1), end + 1
    if "\n".join(lines[at:]).strip():
        raise ValueError(f"text after the last @@ end, at line {at + 1}")
    return "\n".join(lines[:first]) + "\n\n" + text
