"""The arms an evaluation compares, and the config each one runs.

An arm is a strategy (or every tool eager) and whether priors are learned as its
sessions go. Each arm runs from an overlay config the eval writes into its output
folder: it extends the config under evaluation (or a base config written for a bare
catalog) and sets only the deferred-tools strategy and where priors are kept. Every arm
learns into a store of its own in that folder, starting empty, so an evaluation never
reads or teaches the agent's real priors; an arm without priors gets an empty store it
does not save to. The overlays stay in the folder: what an arm ran can be read there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs

from greenroom import load_runtime_config

Strategy = Literal["eager", "dispatch", "inject", "native"]


@attrs.frozen
class Arm:
    name: str
    strategy: Strategy
    priors: bool
    code: bool = False
    """Code mode on: the model may write one script that calls its tools (``run_code``)."""

    @property
    def learns(self) -> bool:
        """Its sessions must run one after another: each learns from the ones before."""
        return self.priors

    def overlay(
        self,
        base: Path,
        folder: Path,
        max_steps: int | None = None,
        seed: int | None = None,
        enabled: Sequence[str] = (),
    ) -> str:
        """The TOML of this arm's config, extending ``base`` (whose ``[plugins] enable`` is
        ``enabled``: a list in an overlay replaces the base's, so code mode adds to it)."""
        lines = [
            f"# Written by `greenroom eval` for the arm {self.name!r}; rewritten on every run.",
            f"extends = {_toml_string(str(base))}",
            "",
        ]
        if self.code:
            lines += ["[plugins]", f"enable = {json.dumps([*dict.fromkeys([*enabled, 'code-mode'])])}", ""]
        if max_steps is not None:
            lines += ["[agent]", f"max_steps = {max_steps}", ""]
        lines.append("[plugins.deferred-tools]")
        if self.strategy == "eager":
            lines.append("enabled = false")
        else:
            lines += ["enabled = true", f"strategy = {_toml_string(self.strategy)}"]
        store = "sqlite://" + (folder / f"{self.file(seed)}.priors.sqlite3").as_posix()  # absolute: sqlite:///abs/...
        lines += [
            "",
            "[plugins.priors-persistence]",
            f"store = {_toml_string(store)}",
            f"save = {'true' if self.priors else 'false'}",
            "",
        ]
        return "\n".join(lines)

    @property
    def slug(self) -> str:
        return self.name.replace("+", "-")

    def file(self, seed: int | None = None) -> str:
        """The name its config and store have in the folder (one per seed: each seed
        learns from its own sessions only)."""
        return self.slug if seed is None else f"{self.slug}-seed{seed}"


ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("all-eager", "eager", priors=False),
        Arm("dispatch", "dispatch", priors=False),
        Arm("dispatch+priors", "dispatch", priors=True),
        Arm("inject", "inject", priors=False),
        Arm("inject+priors", "inject", priors=True),
        Arm("native", "native", priors=False),
        Arm("native+priors", "native", priors=True),
        Arm("code", "dispatch", priors=False, code=True),
    )
}
"""Every arm by name. ``native`` needs a model with hosted tool search (else it works
as dispatch, and says so in a warning); ``code`` is dispatch with code mode on."""

DEFAULT_ARMS = ("all-eager", "dispatch", "dispatch+priors")
BASELINE = "all-eager"
"""The arm cost ratios are taken against (when it is among the arms run)."""


class ArmError(ValueError):
    """Arm names that do not exist."""


def parse_arms(names: Sequence[str] | str | None) -> list[Arm]:
    """Arms from names (a list, or one comma-separated string); None: the defaults."""
    if names is None:
        return [ARMS[n] for n in DEFAULT_ARMS]
    items = names.split(",") if isinstance(names, str) else [p for n in names for p in n.split(",")]
    wanted = [n.strip() for n in items if n.strip()]
    unknown = [n for n in wanted if n not in ARMS]
    if unknown:
        raise ArmError(f"--arms: no arm named {', '.join(map(repr, unknown))}; the arms are {', '.join(ARMS)}")
    if not wanted:
        raise ArmError(f"--arms: name at least one arm ({', '.join(ARMS)})")
    return [ARMS[n] for n in dict.fromkeys(wanted)]


def write_overlays(
    arms: Sequence[Arm], base: Path, folder: Path, max_steps: int | None = None, seed: int | None = None
) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    enabled = load_runtime_config(base)[0].plugins.enable if any(a.code for a in arms) else ()
    out: dict[str, Path] = {}
    for arm in arms:
        path = folder / f"{arm.file(seed)}.toml"
        path.write_text(arm.overlay(base.resolve(), folder.resolve(), max_steps, seed, enabled), encoding="utf-8")
        out[arm.name] = path
    return out


def base_config(tools: Path, folder: Path, *, model: str | None, max_steps: int) -> Path:
    """The config of a bare catalog: its tools, and the model when one is named."""
    lines = [
        "# Written by `greenroom eval --tools`: the catalog under evaluation.",
        "[agent]",
        'id = "eval"',
        f"max_steps = {max_steps}",
    ]
    if model:
        lines.append(f"model = {_toml_string(model)}")
    lines += ["", "[tools]", f"catalogs = [{_toml_string(str(tools.resolve()))}]", ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "base.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _toml_string(value: str) -> str:
    # a JSON string (non-ASCII kept) is a valid TOML basic string, escapes included
    return json.dumps(value, ensure_ascii=False)
