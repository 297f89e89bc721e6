#!/usr/bin/env python3
"""A strict reader of the Prometheus text exposition format (version 0.0.4),
written from its specification (prometheus.io, "Exposition formats"), for
tests of hearth's /metrics endpoints when no Prometheus parser is installed.

usage: prom_text_check.py < metrics.txt
Prints the samples as JSON lines {"name", "labels", "value"} and exits 0, or
prints "line N: what is wrong" and exits 1. Checked: metric and label names,
label value escapes (only \\\\, \\" and \\n), float values (Go's ParseFloat
forms, +Inf/-Inf/NaN), optional integer timestamps, at most one HELP and one
TYPE per family, TYPE before the family's first sample, a known TYPE, a
family's samples together, and no two samples with the same name and labels.
"""
import json
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
FLOAT = re.compile(r"^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|inf|NaN|nan)$")


def family_of(name, types):
    """The family a sample belongs to: histograms and summaries add suffixes."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return name


def labels(text, n):
    """Parses `name="value",...` up to the closing brace; returns (dict, rest)."""
    out = {}
    i = 0
    while True:
        if text[i:i + 1] == "}":
            return out, text[i + 1:]
        m = re.match(LABEL, text[i:])
        if not m:
            raise ValueError(f"line {n}: bad label name at {text[i:i + 20]!r}")
        key = m.group(0)
        i += len(key)
        if text[i:i + 2] != '="':
            raise ValueError(f"line {n}: label {key} has no =\"")
        i += 2
        val = []
        while True:
            if i >= len(text):
                raise ValueError(f"line {n}: label {key}'s value is not closed")
            c = text[i]
            if c == "\\":
                e = text[i + 1:i + 2]
                if e not in ("\\", '"', "n"):
                    raise ValueError(f"line {n}: bad escape \\{e} in label {key}")
                val.append("\n" if e == "n" else e)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise ValueError(f"line {n}: raw newline in label {key}")
            else:
                val.append(c)
                i += 1
        if key in out:
            raise ValueError(f"line {n}: label {key} twice")
        out[key] = "".join(val)
        if text[i:i + 1] == ",":
            i += 1
        elif text[i:i + 1] != "}":
            raise ValueError(f"line {n}: expected , or }} after label {key}")


def check(lines):
    types, helps, seen, done, samples = {}, set(), set(), set(), []
    current = None
    for n, line in enumerate(lines, 1):
        if line == "":
            continue
        if line.startswith("#"):
            m = re.match(r"^# (HELP|TYPE) (" + NAME + r") (.*)$", line)
            if not m:
                if re.match(r"^# (HELP|TYPE)", line):
                    raise ValueError(f"line {n}: malformed {line[:40]!r}")
                continue  # a comment
            kind, name, rest = m.groups()
            if kind == "HELP":
                if name in helps:
                    raise ValueError(f"line {n}: second HELP for {name}")
                helps.add(name)
            else:
                if name in types:
                    raise ValueError(f"line {n}: second TYPE for {name}")
                if rest not in TYPES:
                    raise ValueError(f"line {n}: unknown type {rest!r}")
                if name in done or name == current:
                    raise ValueError(f"line {n}: TYPE of {name} after its samples")
                types[name] = rest
            continue
        m = re.match("^(" + NAME + ")", line)
        if not m:
            raise ValueError(f"line {n}: bad metric name in {line[:40]!r}")
        name = m.group(1)
        rest = line[len(name):]
        lab = {}
        if rest.startswith("{"):
            lab, rest = labels(rest[1:], n)
        parts = rest.split(" ")
        if parts[0] != "" or len(parts) not in (2, 3):
            raise ValueError(f"line {n}: want one space, a value and an optional timestamp")
        if not FLOAT.match(parts[1]):
            raise ValueError(f"line {n}: bad value {parts[1]!r}")
        if len(parts) == 3 and not re.match(r"^-?\d+$", parts[2]):
            raise ValueError(f"line {n}: bad timestamp {parts[2]!r}")
        fam = family_of(name, types)
        if fam != current:
            if fam in done:
                raise ValueError(f"line {n}: family {fam} is split")
            if current:
                done.add(current)
            current = fam
        key = (name, tuple(sorted(lab.items())))
        if key in seen:
            raise ValueError(f"line {n}: a second sample {name}{lab}")
        seen.add(key)
        samples.append({"name": name, "labels": lab, "value": float(parts[1]),
                        "type": types.get(fam, "untyped")})
    return samples


def main():
    text = sys.stdin.read()
    if text and not text.endswith("\n"):
        print("the text does not end with a newline")
        return 1
    try:
        for s in check(text.split("\n")):
            print(json.dumps(s))
    except ValueError as e:
        print(e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
