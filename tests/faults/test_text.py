"""Text that is not valid Unicode, as the world hands it to Python: a file name in Latin-1
from the disk (``os.fsdecode`` keeps the byte as a lone surrogate), a user input typed in a
Latin-1 terminal (``sys.argv`` is decoded the same way). Neither may end a run by surprise
or lose what the session held.

UTF-8 has no lone surrogates: the trace and the session writers escape such text (JSON's
``\\udcxx``), which reads back to the very same string, instead of failing the write.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Bench


def test_a_tool_result_naming_a_file_that_is_not_utf8_costs_nothing(bench: Bench) -> None:
    config = bench.agent([{"tool_calls": [{"name": "list_reports", "arguments": {}}]}, {"text": "done"}])
    run = bench.run(config, "which reports are there?")
    run.ended("final", 0)
    listed = run.results()["list_reports"]["content"]
    assert listed.startswith("report-") and listed.endswith(".txt")


def test_an_input_that_is_not_utf8_ends_no_run_by_surprise(bench: Bench) -> None:
    config = bench.agent([{"text": "hello"}])
    run = bench.run(config, os.fsdecode(b"caf\xe9 menu, please"))
    # answered, or refused with a named error: either way the trace ends with run_end
    assert "UnicodeEncodeError" not in run.output, run.output
    assert run.trace and run.trace[-1]["kind"] == "run_end", run.trace
    assert run.session()["runs"] == 1
