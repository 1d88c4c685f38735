"""greenroom from Python, as it happens: a run read item by item, the model's text as it
arrives and the run's events between, then how it ended.

Run it with ``python examples/python/stream.py``: the model is scripted (it streams its
text a word at a time, as a real model does), so it needs no key.
"""

from __future__ import annotations

import anyio

from greenroom import RunFinished, Runtime, TextDelta, ToolExecuted, make_plugin_host, tool
from greenroom.providers.scripted import ScriptedModel, StreamedModel


@tool
def get_weather(city: str) -> str:
    """The weather in a city today."""
    return f"sunny in {city}"


async def main() -> None:
    model = StreamedModel(
        ScriptedModel(
            [
                {"text": "Let me look.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
                {"text": "It is sunny in Oslo."},
            ]
        )
    )
    runtime = Runtime(model=model, tools=[get_weather], host=make_plugin_host())
    try:
        session = runtime.session()
        async with runtime.stream(session, "What is the weather in Oslo?") as run:
            async for item in run:
                if isinstance(item, TextDelta):  # the model's text, piece by piece
                    print(item.text, end="", flush=True)
                elif isinstance(item, ToolExecuted):
                    print(f"\n[{item.tool}: {item.content}]")
                elif isinstance(item, RunFinished):  # always the last item
                    print(f"\n[{item.stop_reason} after {item.steps} steps]")
        assert run.outcome is not None  # set once the run has ended
        print("answer:", run.outcome.text)
    finally:
        await runtime.aclose()


if __name__ == "__main__":
    anyio.run(main)
