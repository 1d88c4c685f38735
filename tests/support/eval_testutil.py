"""A small catalog and task file for ``greenroom eval``'s tests: six tools a task names,
forty that none does, and four tasks (one of two parts)."""

from __future__ import annotations

import json
from pathlib import Path

TOPICS = [
    ("getWeatherForecast", "Get the weather forecast for a city", {"city": "string"}),
    ("bookFlightTicket", "Book a flight ticket between two airports", {"origin": "string", "destination": "string"}),
    ("convertCurrencyAmount", "Convert an amount of money between currencies", {"amount": "number"}),
    ("translateText", "Translate a text into another language", {"text": "string", "language": "string"}),
    ("sendEmailMessage", "Send an email message to a recipient", {"recipient": "string"}),
    ("reserveHotelRoom", "Reserve a hotel room for some nights", {"hotel": "string", "nights": "integer"}),
]
FILLER = [
    (f"manageInventoryItem{i}", f"Manage warehouse stock record number {i}", {"sku": "string"}) for i in range(40)
]

TASKS = [
    {"id": "weather", "query": "What is the weather forecast for Paris tomorrow?", "gold": ["getWeatherForecast"]},
    {
        "id": "trip",
        "query": "Book a flight ticket from Oslo to Rome. Then reserve a hotel room in Rome for three nights.",
        "gold": ["bookFlightTicket", "reserveHotelRoom"],
    },
    {
        "id": "money",
        "query": "Convert the currency amount of 120 dollars into euros.",
        "gold": ["convertCurrencyAmount"],
    },
    {"id": "mail", "query": "Send an email message to my manager.", "gold": ["sendEmailMessage"]},
]


def tool_line(name: str, description: str, props: dict[str, str]) -> str:
    schema = {
        "type": "object",
        "properties": {k: {"type": v, "description": f"The {k}"} for k, v in props.items()},
        "required": list(props),
    }
    return json.dumps({"name": name, "description": description, "parameters": schema, "group": None})


def write_catalog(tmp_path: Path) -> tuple[Path, Path]:
    tools = tmp_path / "tools.jsonl"
    tools.write_text("\n".join(tool_line(*t) for t in TOPICS + FILLER) + "\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(t) for t in TASKS) + "\n")
    return tools, tasks
