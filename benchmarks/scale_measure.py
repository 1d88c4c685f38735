"""The in-process measurements of ``benchmarks/scale.py``, each with its baseline timed in
the same process: ToolSearch against plain ``bm25s``, per-step overhead of each strategy
against a bare loop, an unknown tool name against a dict lookup, and the listing against
its token budget.

Every runtime is composed from a config file by ``build_runtime``, as ``greenroom run``
does (every installed plugin with its defaults), with a scripted model; times come from
the runtime's own ``ToolExecuted`` events, so a search is timed as the model pays for it:
its validation, hooks and the tool itself.
"""

from __future__ import annotations

import gc
import random
import re
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import anyio
from scale_catalog import SEED, Catalog, misspell, queries, write_config

from greenroom import ModelRequest, ToolCallContext, count_tokens, tool
from greenroom import events as ev
from greenroom.compose.build import build_runtime
from greenroom.models import ModelResponse
from greenroom.providers.scripted import turn_from_record
from greenroom.run.runtime import Runtime

Policy = Callable[[ModelRequest], dict[str, Any]]
STRATEGIES = ("dispatch", "inject", "native")
_WORD = re.compile(r"[\w-]+")  # a tool or group name as a word of a text


@tool
async def noop() -> str:
    """Does nothing."""
    return "ok"


class QuietModel:
    """A scripted model driven by a policy that counts no usage: token counting is the
    model's side, and here it would hide what the runtime costs. It notes the start of
    each call, so a session's steps can be timed without what it pays once."""

    def __init__(self, policy: Policy, *, native_tool_search: bool = False, settle: bool = False) -> None:
        self.policy = policy
        self.native_tool_search = native_tool_search  # claims a hosted tool search (native)
        self.settle = settle
        self.stamps: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.settle and not self.stamps:
            # what the run made before its first call (a native run's 100,000-tool arrays)
            # is collected now, once, not by the collector's next passes inside the steps
            gc.collect()
        self.stamps.append(time.perf_counter())
        return ModelResponse(turn_from_record(self.policy(request), "bench", request.step))


async def bare_loop(steps: int) -> float:
    """The baseline of a step: the same model calls and no-op executions, nothing around."""
    model = QuietModel(lambda request: _call("noop") if request.step < steps else {"text": "done"})
    ctx: ToolCallContext[None] = ToolCallContext("c", "r", "noop")
    started = time.perf_counter()
    for step in range(1, steps + 1):
        response = await model.complete(ModelRequest(system=(), tools=(noop.descriptor,), messages=(), step=step))
        for _ in response.tool_calls:
            await noop.execute({}, ctx)
    return time.perf_counter() - started


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _runtime(
    catalog: Catalog, label: str, model: QuietModel, *, max_steps: int, deferred: str = "", with_noop: bool = True
) -> Runtime:
    config = write_config(catalog, label, max_steps=max_steps, deferred=deferred)
    return build_runtime(config, model=model, extra_tools=[noop] if with_noop else [])


async def _executed(rt: Runtime, user_input: str = "go") -> list[ev.ToolExecuted]:
    """Run one session; the tool calls it made, in order."""
    seen: list[ev.ToolExecuted] = []
    unsubscribe = rt.events.subscribe(lambda e: seen.append(e) if isinstance(e, ev.ToolExecuted) else None)
    try:
        await rt.session().run(user_input)
    finally:
        unsubscribe()
    return seen


def _p50_ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


class PlainBM25s:
    """The baseline of a search: bm25s' own tokenizer and BM25 over ``name description``."""

    def __init__(self, texts: list[str], k: int) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.k = min(k, len(texts))
        started = time.perf_counter()
        docs = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(docs, show_progress=False)
        self.build_ms = (time.perf_counter() - started) * 1000

    def timed(self, query: str) -> float:
        """Seconds one search takes, the query's tokenizing included."""
        started = time.perf_counter()
        tokens = self._bm25s.tokenize(
            [query], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )
        self.retriever.retrieve(tokens, k=self.k, show_progress=False)
        return time.perf_counter() - started


def search(catalog: Catalog, count: int, k: int = 5) -> dict[str, Any]:
    """ToolSearch p50 over ``count`` user requests (the first search, which may build the
    index, is reported apart) against plain bm25s over the same texts and requests.

    bm25s is timed twice. In the run: each request is searched with bm25s on the model's
    turn just before the ToolSearch that asks it, so both find the processor as a step of
    the agent leaves it (caches holding the model's turn, the last result's token count,
    the request). And alone: the same requests one after the other in a tight loop, where
    its arrays and code stay in cache (about 1.5x faster at 1,000 tools)."""
    asked = queries(count + 1)
    base = PlainBM25s(catalog.texts, k)
    in_loop: list[float] = []

    def decide(request: ModelRequest) -> dict[str, Any]:
        i = request.step - 1
        if i >= len(asked):
            return {"text": "done"}
        if i > 0:
            in_loop.append(base.timed(asked[i]))
        return _call("ToolSearch", query=asked[i], max_results=k)

    rt = _runtime(catalog, "search", QuietModel(decide), max_steps=len(asked) + 1)
    try:
        calls = anyio.run(_executed, rt)
    finally:
        anyio.run(rt.aclose)
    if len(calls) != len(asked) or calls[0].tool != "ToolSearch" or calls[0].is_error:
        first = calls[0].content[:200] if calls else "no tool call was made"
        raise RuntimeError(f"ToolSearch did not answer: {first}")
    alone = _p50_ms([base.timed(q) for q in asked[1:]])
    loop = _p50_ms(in_loop)
    p50 = statistics.median(c.duration_ms for c in calls[1:])
    return {
        "p50_ms": p50,
        "first_ms": calls[0].duration_ms,
        "bm25s_p50_ms": loop,
        "bm25s_alone_p50_ms": alone,
        "bm25s_build_ms": base.build_ms,
        "ratio": p50 / loop,
        "ratio_alone": p50 / alone,
        "searches": len(calls) - 1,
        "errors": sum(1 for c in calls if c.is_error),
        "sample": calls[-1].content[:300],  # to see that a search found something
    }


def step_overhead(
    catalog: Catalog, strategy: str, steps: int, repeat: int, bare_step: float, seconds: float = 20.0
) -> dict[str, Any]:
    """Per-step cost of a session whose model calls one no-op tool a step: the time from
    its first model call to its last over the steps between (the bare loop's step is the
    same model call and tool execution). Garbage and young objects the run made before
    its first model call are collected before it, as a run's own cost. A strategy so
    slow that ``steps`` steps would take over ``seconds`` takes fewer (at least 5): the
    figure is per step either way."""
    budget = {"steps": steps}

    def decide(request: ModelRequest) -> dict[str, Any]:
        return _call("noop") if request.step < budget["steps"] else {"text": "done"}

    # the no-op tool is eager, so each step is a plain call whatever the strategy defers
    deferred = f'strategy = "{strategy}"\nrules = [{{ tool = "noop", mode = "eager" }}]'
    model = QuietModel(decide, native_tool_search=strategy == "native", settle=True)
    rt = _runtime(catalog, f"strategy-{strategy}", model, max_steps=steps + 1, deferred=deferred)

    def timed(n: int) -> tuple[float, float]:
        """Seconds a step takes, and from the start of the run to its first model call."""
        budget["steps"] = n
        model.stamps.clear()
        gc.collect()  # garbage left by the last run is collected outside the timing
        started = time.perf_counter()
        anyio.run(_executed, rt)
        stamps = model.stamps
        return (stamps[-1] - stamps[0]) / (len(stamps) - 1), stamps[0] - started

    try:
        guess, _ = timed(5)  # also: the first session pays for what later ones find cached
        steps = max(5, min(steps, int(seconds / max(guess, 1e-6))))
        runs = [timed(steps) for _ in range(repeat)]
    finally:
        anyio.run(rt.aclose)
    per_step = statistics.median(r[0] for r in runs)
    return {
        "strategy": strategy,
        "step_us": per_step * 1e6,
        "overhead_us": max(per_step - bare_step, 0.0) * 1e6,
        "bare_us": bare_step * 1e6,
        "ratio": per_step / bare_step,
        "first_call_ms": statistics.median(r[1] for r in runs) * 1000,
        "steps": steps,
    }


def bare_step(steps: int, repeat: int) -> float:
    """Seconds a step of the bare loop takes: the same model calls and tool executions
    with nothing around them."""
    return statistics.median(anyio.run(bare_loop, steps) for _ in range(repeat)) / steps


def misspelled(catalog: Catalog, count: int) -> dict[str, Any]:
    """An unknown tool name's error (with its "did you mean") against a call of a known
    tool in the same session, and against a dict lookup of the same names; and how often
    the name the model meant is among the suggestions."""
    rng = random.Random(SEED)
    known = set(catalog.names)
    meant: dict[str, str] = {}
    while len(meant) < count:
        name = rng.choice(catalog.names)
        typo = misspell(name, rng)
        if typo not in known:
            meant.setdefault(typo, name)
    typos = list(meant)

    def decide(request: ModelRequest) -> dict[str, Any]:
        i = request.step - 1
        if i >= 2 * len(typos):
            return {"text": "done"}
        return _call(typos[i // 2]) if i % 2 == 0 else _call("noop")

    deferred = 'rules = [{ tool = "noop", mode = "eager" }]'
    rt = _runtime(catalog, "misspelled", QuietModel(decide), max_steps=2 * len(typos) + 1, deferred=deferred)
    try:
        calls = anyio.run(_executed, rt)
    finally:
        anyio.run(rt.aclose)
    missed = [c for c in calls if c.tool != "noop"]
    if len(missed) != len(typos) or not all(c.is_error for c in missed):
        raise RuntimeError("a misspelled name did not get an error")
    words = [set(_WORD.findall(c.content)) for c in missed]
    table = dict.fromkeys(catalog.names, True)
    lookups = timeit.repeat(lambda: [t in table for t in typos], number=20, repeat=5)
    lookup_ms = min(lookups) / 20 / len(typos) * 1000
    miss = statistics.median(c.duration_ms for c in missed)
    hit = statistics.median(c.duration_ms for c in calls if c.tool == "noop")
    return {
        "miss_ms": miss,
        "known_ms": hit,
        "dict_ns": lookup_ms * 1e6,
        "ratio_known": miss / hit,
        "ratio_dict": miss / lookup_ms,
        "suggested": sum(1 for c, w in zip(missed, words, strict=True) if meant[c.tool] in w),
        "misses": len(missed),
        "hint": missed[0].content[:300],
    }


def listing(catalog: Catalog, budget: int) -> dict[str, Any]:
    """The deferred-tools listing of the first request: its tokens against ``budget``,
    and how many of the catalog's groups and tools it names."""
    model = QuietModel(lambda request: {"text": "done"})
    rt = _runtime(catalog, "listing", model, max_steps=2, with_noop=False)
    try:
        request = anyio.run(rt.preview, rt.session())
    finally:
        anyio.run(rt.aclose)
    base = rt.config.agent.system_prompt if rt.config is not None else ""
    text = "\n\n".join(s.text for s in request.system if s.text and s.text != base)
    words = set(_WORD.findall(text))
    tokens = count_tokens(text)
    return {
        "tokens": tokens,
        "budget": budget,
        "ratio": tokens / budget if budget else 0.0,
        "groups_named": sum(1 for g in catalog.groups if g in words),
        "groups": len(catalog.groups),
        "tools_named": sum(1 for n in catalog.names if n in words),
        "tools": len(catalog.names),
        "tools_sent": len(request.tools),
        "head": text[:400],
    }
