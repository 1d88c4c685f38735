"""greenroom from Python: a runtime with your own tools and the installed plugins, the
request the model would get on step 1, a run, and the session saved and resumed.

Run it with ``python examples/python/embed.py``: the model is scripted, so it needs no key.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from greenroom import Runtime, make_plugin_host, tool
from greenroom.providers.scripted import ScriptedModel


@tool
def get_weather(city: str) -> str:
    """The weather in a city today."""
    return f"sunny in {city}"


async def main(folder: Path) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
            {"text": "It is sunny in Oslo."},
        ]
    )
    # the installed plugins (deferred tools, search ranking, priors ...) with their defaults
    runtime = Runtime(model=model, tools=[get_weather], host=make_plugin_host())
    try:
        session = runtime.session()
        request = await runtime.preview(session)  # what step 1 would send, without calling the model
        print("tools sent:", [t.name for t in request.tools])
        outcome = await runtime.run(session, "What is the weather in Oslo?")
        print("answer:", outcome.stop_reason, outcome.text)
        saved = session.save(folder / "session.json")
        resumed = runtime.load_session(saved)
        print("resumed messages:", len(resumed.messages))
    finally:
        await runtime.aclose()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp))
