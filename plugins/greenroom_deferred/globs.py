"""Tool-name globs: case-sensitive, anchored to the whole name, with ``{a,b}``."""

from __future__ import annotations

import fnmatch
import functools
import re


class GlobError(ValueError):
    pass


def check_glob(pattern: str) -> None:
    """Reject patterns with unbalanced brackets or braces, or empty alternatives."""
    if not pattern:
        raise GlobError("empty tool pattern")
    depth_brace = 0
    in_class = False
    for ch in pattern:
        if in_class:
            if ch == "]":
                in_class = False
            continue
        if ch == "[":
            in_class = True
        elif ch == "{":
            depth_brace += 1
        elif ch == "}":
            depth_brace -= 1
            if depth_brace < 0:
                raise GlobError(f"unbalanced '}}' in tool pattern {pattern!r}")
    if in_class:
        raise GlobError(f"unclosed '[' in tool pattern {pattern!r}")
    if depth_brace:
        raise GlobError(f"unclosed '{{' in tool pattern {pattern!r}")


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c}d`` -> ``[abd, acd]`` (nested braces work)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    head, tail = pattern[: m.start()], pattern[m.end() :]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(head + alt + tail))
    return out


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    parts = [fnmatch.translate(p) for p in expand_braces(pattern)]
    return re.compile("|".join(f"(?:{p})" for p in parts))


def is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[{")


def matches(pattern: str, name: str) -> bool:
    if not is_glob(pattern):
        return pattern == name
    return compile_glob(pattern).fullmatch(name) is not None
