"""A skill entry as SEP-2640 shapes it: what is checked, what is refused when loaded, and
the front matter a SKILL.md begins with."""

from __future__ import annotations

from typing import Any

import pytest

from greenroom.skills.entry import MAX_SKILL_BYTES, MAX_SKILL_FILES, SkillEntry, front_matter, sha256_digest

DIGEST = sha256_digest(b"x")


def entry(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uri": "skill://acme/billing/refunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "Process refunds", "license": "MIT"},
        "resources": [
            {"uri": "skill://acme/billing/refunds/SKILL.md", "digest": DIGEST, "size": 1},
            {"uri": "skill://acme/billing/refunds/examples/email.md", "digest": DIGEST, "size": 1},
        ],
    }
    return {**base, **over}


def test_an_entry_round_trips_with_its_files_and_front_matter() -> None:
    parsed = SkillEntry.from_json(entry())
    assert parsed.name == "refunds" and parsed.root == "skill://acme/billing/refunds"
    assert parsed.refusal is None and parsed.frontmatter["license"] == "MIT"
    email = parsed.file("examples/email.md")
    assert email is not None and parsed.path_of(email) == "examples/email.md"
    assert parsed.file("examples/other.md") is None
    assert SkillEntry.from_json(parsed.to_json()) == parsed
    assert email.check(b"x") is None and "bytes" in (email.check(b"xy") or "") and email.check(b"y")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"uri": "skill://acme/refunds/README.md"}, "is not the URI of a SKILL.md"),
        ({"frontmatter": {"description": "no name"}}, "has no name"),
        ({"frontmatter": {"name": "chargebacks", "description": "d"}}, "is not its name"),
        ({"resources": "all of them"}, "neither a list nor 'dynamic'"),
        ({"resources": [{"uri": "skill://acme/billing/refunds/SKILL.md", "digest": "md5:00", "size": 1}]}, "digest"),
        ({"resources": [{"uri": "skill://elsewhere/SKILL.md", "digest": DIGEST, "size": 1}]}, "not a file within"),
        ({"resources": [{"uri": "skill://acme/billing/refunds/a.md", "digest": DIGEST, "size": 1}]}, "do not list"),
        ({"resources": [{"uri": "skill://acme/billing/refunds/SKILL.md", "digest": DIGEST, "size": -1}]}, "size"),
    ],
)
def test_an_entry_that_breaks_the_extensions_rules_says_what_is_wrong(change: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        SkillEntry.from_json(entry(**change))


def test_a_skill_over_the_limits_or_generated_is_kept_and_refused() -> None:
    many = [{"uri": f"skill://acme/billing/refunds/f{i}", "digest": DIGEST, "size": 1} for i in range(MAX_SKILL_FILES)]
    files = [{"uri": "skill://acme/billing/refunds/SKILL.md", "digest": DIGEST, "size": 1}, *many]
    assert "513 files" in (SkillEntry.from_json(entry(resources=files)).refusal or "")
    huge = [{"uri": "skill://acme/billing/refunds/SKILL.md", "digest": DIGEST, "size": MAX_SKILL_BYTES + 1}]
    assert "16 MiB" in (SkillEntry.from_json(entry(resources=huge)).refusal or "")
    generated = SkillEntry.from_json(entry(resources="dynamic"))
    assert generated.files is None and "dynamic" in (generated.refusal or "")
    assert generated.to_json()["resources"] == "dynamic"


def test_front_matter_is_read_as_json_values() -> None:
    text = "---\nname: refunds\ndescription: Process refunds\nreleased: 2026-09-13\n---\n# Body\n---\n"
    assert front_matter(text) == {"name": "refunds", "description": "Process refunds", "released": "2026-09-13"}
    with pytest.raises(ValueError, match="does not begin with YAML front matter"):
        front_matter("# no front matter\n")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        front_matter("---\n- a list\n---\n")
