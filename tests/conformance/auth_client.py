"""The client the conformance suite's auth scenarios run: ``greenroom mcp probe``, told what
each scenario hands its client. ``python auth_client.py URL`` (the suite appends the URL).

The suite names the scenario in ``MCP_CONFORMANCE_SCENARIO`` and gives what a client would
have been configured with in ``MCP_CONFORMANCE_CONTEXT`` (JSON): a pre-registered client's
id and secret. The probe signs in unattended (the suite's authorization servers approve at
once), offers the suite's client ID metadata document (used where the authorization server
supports those, else it registers), and calls the suite's ``test-tool`` after listing, as
the reference client does, so that a call that needs more scopes steps up.
"""

from __future__ import annotations

import json
import os
import sys

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
SECRET_VAR = "GREENROOM_CONFORMANCE_CLIENT_SECRET"


def argv(url: str, context: dict[str, object]) -> list[str]:
    args = [sys.executable, "-m", "greenroom.cli", "mcp", "probe", "--unattended", "--call", "test-tool"]
    args += ["--client-metadata-url", CLIENT_METADATA_URL]
    if context.get("client_id"):
        args += ["--client-id", str(context["client_id"])]
    if context.get("client_secret"):
        os.environ[SECRET_VAR] = str(context["client_secret"])
        args += ["--client-secret-env", SECRET_VAR]
    return [*args, url]


def main() -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    command = argv(sys.argv[-1], context)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
