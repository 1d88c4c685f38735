"""Tool-name globs: case-sensitive, anchored to the whole name, with ``{a,b}``.

Placement rules and the tool policy (``[tools.policy]``) use the same globs. The policy
also asks what a glob says about every name that starts with a prefix
(``could_match_prefixed``, ``matches_every_prefixed``): an MCP server's tools are all
named ``server__...``, so a policy can hide a whole server before it has ever been
started and listed.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Sequence


class GlobError(ValueError):
    pass


def check_glob(pattern: str) -> None:
    """Reject patterns with unbalanced brackets or braces, or empty alternatives."""
    if not isinstance(pattern, str):
        raise GlobError(f"a tool pattern is a string, not {type(pattern).__name__}")
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


def matches_any(patterns: Sequence[str], name: str) -> str | None:
    """The first of ``patterns`` that matches ``name``, or None."""
    for p in patterns:
        if matches(p, name):
            return p
    return None


# -- what a glob says about every name with a given prefix ------------------------------

_STAR = "*"


@functools.lru_cache(maxsize=1024)
def _tokens(alternative: str) -> tuple[str, ...]:
    """One brace-free glob as tokens: ``*``, ``?``, a ``[...]`` class, or one character."""
    out: list[str] = []
    i = 0
    while i < len(alternative):
        ch = alternative[i]
        if ch == "[":
            j = i + 1
            if alternative[j : j + 1] == "!":
                j += 1
            if alternative[j : j + 1] == "]":  # a leading "]" is a member, not the end
                j += 1
            end = alternative.find("]", j)
            if end < 0:  # fnmatch reads an unclosed bracket as the character itself
                out.append("[")
                i += 1
                continue
            out.append(alternative[i : end + 1])
            i = end + 1
            continue
        out.append(ch)
        i += 1
    return tuple(out)


def _step(token: str, ch: str) -> bool:
    if token == "?":
        return True
    if len(token) > 1:  # a class: fnmatch's own reading of it, applied to one character
        return compile_glob(token).fullmatch(ch) is not None
    return token == ch


def _states_after(tokens: Sequence[str], prefix: str) -> set[int]:
    """The token positions a glob can be at after reading ``prefix`` (an NFA walk)."""

    def closure(states: set[int]) -> set[int]:
        todo = list(states)
        while todo:
            i = todo.pop()
            if i < len(tokens) and tokens[i] == _STAR and i + 1 not in states:
                states.add(i + 1)
                todo.append(i + 1)
        return states

    states = closure({0})
    for ch in prefix:
        nxt: set[int] = set()
        for i in states:
            if i >= len(tokens):
                continue
            if tokens[i] == _STAR:
                nxt.add(i)
            elif _step(tokens[i], ch):
                nxt.add(i + 1)
        states = closure(nxt)
        if not states:
            break
    return states


def could_match_prefixed(pattern: str, prefix: str) -> bool:
    """Whether ``pattern`` matches some name ``prefix + suffix`` with a non-empty suffix.
    Never wrong in the unsafe direction: True when in doubt."""
    for alt in expand_braces(pattern):
        tokens = _tokens(alt)
        if any(i < len(tokens) for i in _states_after(tokens, prefix)):
            return True
    return False


def matches_every_prefixed(pattern: str, prefix: str) -> bool:
    """Whether ``pattern`` matches every name ``prefix + suffix`` with a non-empty suffix
    (``github__*`` and ``github_*`` do for ``github__``). Never wrong in the unsafe
    direction: False when in doubt."""
    for alt in expand_braces(pattern):
        tokens = _tokens(alt)
        for i in _states_after(tokens, prefix):
            rest = tokens[i:]
            if rest and all(t == _STAR for t in rest):
                return True
    return False


__all__ = [
    "GlobError",
    "check_glob",
    "compile_glob",
    "could_match_prefixed",
    "expand_braces",
    "is_glob",
    "matches",
    "matches_any",
    "matches_every_prefixed",
]
