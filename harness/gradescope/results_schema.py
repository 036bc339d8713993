"""A small JSON Schema checker for results.schema.json (no dependency to install on Gradescope).

It understands only the keywords that schema uses: type, enum, required,
properties, additionalProperties (true/false), items, minItems, minimum and
minLength. An unknown keyword is an error, not ignored: a schema edit that
used one would otherwise check nothing.

    python3 harness/gradescope/results_schema.py results.json   # prints the problems, exit 1 if any
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().parent / "results.schema.json"
ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description"}
KEYWORDS = {"type", "enum", "required", "properties", "additionalProperties", "items", "minItems", "minimum",
            "minLength"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # JSON has one number type; bool is an int in Python and must not pass for one
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def problems(instance, schema: dict | None = None, where: str = "$") -> list[str]:
    """Every way `instance` breaks `schema`, one line each naming the JSON path; [] when it conforms."""
    schema = load_schema() if schema is None else schema
    found: list[str] = []
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        return [f"{where}: the schema uses keywords this checker does not know: {sorted(unknown)}"]
    if "type" in schema:
        wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](instance) for t in wanted):
            return [f"{where}: {type(instance).__name__} {instance!r:.60}, expected {' or '.join(wanted)}"]
    if "enum" in schema and instance not in schema["enum"]:
        found.append(f"{where}: {instance!r:.60} is not one of {schema['enum']}")
    if "minimum" in schema and TYPES["number"](instance) and instance < schema["minimum"]:
        found.append(f"{where}: {instance} is below the minimum {schema['minimum']}")
    if "minLength" in schema and isinstance(instance, str) and len(instance) < schema["minLength"]:
        found.append(f"{where}: a string shorter than {schema['minLength']}")
    if isinstance(instance, dict):
        for key in schema.get("required", []):
            if key not in instance:
                found.append(f"{where}: missing the required field {key!r}")
        properties = schema.get("properties", {})
        for key, value in instance.items():
            if key in properties:
                found += problems(value, properties[key], f"{where}.{key}")
            elif schema.get("additionalProperties", True) is False:
                found.append(f"{where}: field {key!r} is not in Gradescope's format")
    if isinstance(instance, list):
        if "minItems" in schema and len(instance) < schema["minItems"]:
            found.append(f"{where}: {len(instance)} item(s), at least {schema['minItems']} expected")
        if "items" in schema:
            for i, item in enumerate(instance):
                found += problems(item, schema["items"], f"{where}[{i}]")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 harness/gradescope/results_schema.py results.json", file=sys.stderr)
        return 2
    try:
        instance = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"results_schema: cannot read {argv[0]}: {exc}")
        return 1
    found = problems(instance)
    for line in found:
        print(line)
    print(f"{argv[0]}: {'conforms to' if not found else f'{len(found)} problem(s) with'} {SCHEMA_PATH.name}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
