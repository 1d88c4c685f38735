"""A catalog reads every record as Python's ``json`` reads it, however it is read (in
chunks, or from the read kept on disk): values other JSON parsers read differently (NaN,
integers beyond 64 bits, lone surrogates, repeated keys, deep nesting) come out exactly
as ``json`` gives them, and what ``json`` rejects is an error naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from greenroom._support.digest_cache import DigestCache, use_digest_cache
from greenroom.tools import catalog_disk
from greenroom.tools.catalog import CatalogError, read_catalog


def nested(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


ODD = {
    "nan": '{"name": "t", "parameters": {"type": "object", "maximum": NaN, "minimum": -Infinity}}',
    "huge float": '{"name": "t", "parameters": {"type": "object", "maximum": 1e400}}',
    "big integers": '{"name": "t", "description": 12345678901234567890123, "parameters": {"type": "object",'
    ' "maximum": 18446744073709551616, "minimum": -9999999999999999999, "multipleOf": 9223372036854775807}}',
    "repeated keys": '{"name": "t", "name": "u", "parameters": {"type": "object", "properties": {"q": {"type":'
    ' "string"}}, "type": "object", "properties": {"r": {"type": "integer"}, "r": {"type": "number"}}}}',
    "lone surrogates": '{"name": "t\\ud800", "description": "\\udc00 and \\ud83d\\ude00", "group": "\\udfff"}',
    "odd fields": '{"name": "t", "description": 5, "group": ["g"], "deferrable": 3, "parameters": []}',
    "nested 300 levels": '{"name": "t", "parameters": {"type": "object", "x": ' + nested(300) + "}}",
    "floats": '{"name": "t", "parameters": {"minimum": -0.0, "maximum": 1.7976931348623157e308, "multipleOf":'
    ' 0.30000000000000004, "exclusiveMinimum": 5e-324, "x": [1E2, 0.1e1, -0, 1.0]}}',
}


def exact(value: Any) -> str:
    """A rendering that tells 1 from 1.0 and True, -0.0 from 0.0, and keeps key order."""
    return repr(value)


def seen(path: Path) -> list[str]:
    return [
        exact((d.name, d.description, d.group, d.deferrable, dict(d.parameters)))
        for d in read_catalog(path).descriptors
    ]


def by_json(line: str) -> list[str]:
    record = json.loads(line)
    parameters = record.get("parameters") or {"type": "object", "properties": {}}
    description = str(record.get("description") or "")
    return [
        exact((record["name"], description, record.get("group"), record.get("deferrable", "automatic"), parameters))
    ]


@pytest.mark.parametrize("case", ODD)
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_record_reads_as_json_reads_it(tmp_path: Path, case: str, suffix: str) -> None:
    line = ODD[case]
    path = tmp_path / f"c{suffix}"
    # among many ordinary records, so it is read in a chunk as a big catalog's would be
    filler = [json.dumps({"name": f"f{i}", "parameters": {"type": "object"}}) for i in range(700)]
    lines = [*filler[:600], line, *filler[600:]]
    path.write_text(f"[{','.join(lines)}]" if suffix == ".json" else "\n".join(lines) + "\n", encoding="utf-8")
    got = seen(path)
    assert got[600] == by_json(line)[0]
    assert got[:600] + got[601:] == [x for f in filler for x in by_json(f)]


@pytest.mark.parametrize("cached", [False, True])
def test_odd_values_survive_the_read_kept_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    monkeypatch.setattr(catalog_disk, "MIN_BYTES", 1 if cached else 1 << 40)
    path = tmp_path / "c.jsonl"
    lines = [line.replace('"name": "t"', f'"name": "t{i}"') for i, line in enumerate(ODD.values())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with use_digest_cache(DigestCache(tmp_path / "cache")):
        cold, warm = seen(path), seen(path)
    assert cold == warm == [x for line in lines for x in by_json(line)]


def test_nesting_json_cannot_read_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    filler = [json.dumps({"name": f"f{i}"}) for i in range(20)]
    # deeper than json reads at the default recursion limit (some parsers read 1024 levels)
    path.write_text("\n".join([*filler, '{"name": "t", "parameters": ' + nested(1010) + "}"]) + "\n")
    with pytest.raises(CatalogError, match=r"c\.jsonl:21: nested too deeply to read"):
        read_catalog(path)
    whole = tmp_path / "c.json"
    whole.write_text("[" + ",".join([*filler, '{"name": "t", "parameters": ' + nested(1010) + "}"]) + "]")
    with pytest.raises(CatalogError, match=r"c\.json: not valid JSON: maximum recursion depth"):
        read_catalog(whole)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"name": "t",}', r"c\.jsonl:3: not valid JSON: Expecting property name"),
        ('{"name": "t"} {"name": "u"}', r"c\.jsonl:3: not valid JSON: Extra data"),
        ('{"name": "t", "x": 1}', r"c\.jsonl:3: unknown key\(s\) x"),
        ('{"name": "t", "parameters": [1]}', r"c\.jsonl:3: 'parameters' of 't' must be a JSON Schema object"),
        ("\ufeff" + '{"name": "t"}', r"c\.jsonl:3: not valid JSON: Unexpected UTF-8 BOM"),
        ('{"name": "t\x01"}', r"c\.jsonl:3: not valid JSON: Invalid control character"),
    ],
)
def test_a_malformed_record_names_the_file_and_line(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"name": "a"}\n\n' + text + '\n{"name": "b"}\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=error):
        read_catalog(path)
