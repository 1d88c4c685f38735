"""Every command's ``--help`` as a user reads it at 80 columns, and docs/cli.md made from it.

``python tests/support/cli_reference.py > docs/cli.md`` writes the page again;
tests/core/cli/test_cli_help.py fails when the page and today's help differ.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

WIDTH = 80

# rendered by main() in a fresh process: the installed plugins add their commands there
EVERY_HELP = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from greenroom.cli import app, main
    from greenroom.cli.app import add_plugin_commands
    import typer

    def paths(command, path):
        yield path
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from paths(sub, [*path, name])

    add_plugin_commands(app)
    helps = {}
    for path in paths(typer.main.get_command(app), []):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                main([*path, "--help"])
            except SystemExit:
                pass
        helps[" ".join(path)] = out.getvalue()
    print(json.dumps(helps))
    """
)


def render_helps() -> dict[str, str]:
    """Command path (``""`` for ``greenroom`` itself) -> its help text."""
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [sys.executable, "-c", EVERY_HELP],
            cwd=home,
            capture_output=True,
            text=True,
            env={**os.environ, "GREENROOM_HOME": home, "COLUMNS": str(WIDTH)},
            timeout=300,
            check=True,
        )
    found: dict[str, str] = json.loads(done.stdout)
    return found


def markdown(helps: dict[str, str]) -> str:
    lines = [
        "# Command line",
        "",
        "Every `greenroom` command's `--help`, with greenroom's own plugins installed (each",
        "adds its commands). Generated: `python tests/support/cli_reference.py > docs/cli.md`;",
        "a test fails when this page and the commands' help differ.",
    ]
    for path in sorted(helps):
        lines += ["", f"## greenroom {path}".rstrip(), "", "```text", helps[path].rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown(render_helps()))
