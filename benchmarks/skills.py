"""What skills cost a run: the listing's tokens for N skills, against sending every SKILL.md.

The skills are local ones (``[skills] folders``), read through the runtime as a run reads
them, their listing rendered by the deferred-tools plugin as the model gets it (in the
system prompt, ``listing_budget`` tokens at most). The SKILL.md is a real one, the one the
``typer`` package ships (``typer/.agents/skills/typer/SKILL.md``, installed with the dev
extras), copied under N names, each with its own description; loading one skill costs one
SKILL.md, its tool result. Counts are exact o200k tokens (``greenroom.count_tokens``).

    python benchmarks/skills.py [--counts 10,100,1000]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from importlib.util import find_spec
from pathlib import Path

import anyio

from greenroom import count_tokens
from greenroom.compose.build import build_runtime


def real_skill() -> str:
    spec = find_spec("typer")
    assert spec is not None and spec.origin is not None, "pip install -e '.[dev]' installs typer"
    return (Path(spec.origin).parent / ".agents" / "skills" / "typer" / "SKILL.md").read_text(encoding="utf-8")


def measure(n: int, text: str, folder: Path) -> tuple[int, int, int]:
    """(listing tokens with N skills, skills described in it, every SKILL.md's tokens)."""
    skills = folder / f"skills-{n}"
    for i in range(n):
        name = f"typer-{i:04}"
        (skills / name).mkdir(parents=True)
        body = re.sub(r"^name: typer$", f"name: {name}", text, count=1, flags=re.M)
        body = body.replace("Typer best practices", f"Typer best practices, set {i}", 1)
        (skills / name / "SKILL.md").write_text(body, encoding="utf-8")
    config = folder / f"agent-{n}.toml"
    config.write_text(f'[agent]\nmodel = "scripted:"\n[skills]\nfolders = ["{skills.name}"]\n', encoding="utf-8")
    rt = build_runtime(config)
    try:
        request = anyio.run(rt.preview, rt.session())
    finally:
        anyio.run(rt.aclose)
    listing = next(s.text for s in request.system if s.text.startswith("Deferred tools"))
    every = sum(count_tokens((skills / d / "SKILL.md").read_text()) for d in sorted(p.name for p in skills.iterdir()))
    described = len(re.findall(r"^  \S+ - ", listing, flags=re.M))
    return count_tokens(listing), described, every


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="10,100,1000")
    args = parser.parse_args()
    text = real_skill()
    print(f"one SKILL.md (typer's): {count_tokens(text)} tokens, {len(text.encode())} bytes")
    print(f"{'skills':>7} {'listing':>8} {'per skill':>10} {'described':>10} {'every SKILL.md':>15} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(c) for c in args.counts.split(",")):
            listing, described, every = measure(n, text, Path(tmp))
            per = listing / n  # the listing's hint and title shared among them
            print(f"{n:>7} {listing:>8} {per:>10.1f} {described:>10} {every:>15} {every / listing:>7.0f}x")


if __name__ == "__main__":
    main()
