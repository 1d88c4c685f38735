"""Skills in the listing: each by name and its description's first line while the whole
listing fits its budget; past it, a skills group is one line with a count and the names
that fit, like any group, and no text longer than the budget allows is rendered."""

from __future__ import annotations

from greenroom import ToolDescriptor, count_tokens
from greenroom.run.views import GroupView
from greenroom_deferred.listing import _surely_too_long, budgeted_listing

DESCRIPTION = "Turn a quarterly spreadsheet into a short report for the finance team. " * 3


def skills_group(n: int) -> GroupView:
    known = tuple(ToolDescriptor(f"docs__skill_report-{i:04}", DESCRIPTION, group="skills:docs") for i in range(n))
    names = tuple(d.name for d in known)
    return GroupView("skills:docs", "docs", "Skills of MCP server 'docs'", None, True, False, known, names, True)


def test_a_few_skills_are_listed_with_what_each_is_for() -> None:
    text = budgeted_listing((), style="descriptions", budget=2000, hint="Search.", groups=[skills_group(3)])
    assert "Skills (instructions for a task" in text and "(3 skills)" in text
    assert "  docs__skill_report-0002 - Turn a quarterly spreadsheet into a short report" in text


def test_a_thousand_skills_fit_the_budget_as_a_group_line() -> None:
    text = budgeted_listing((), style="descriptions", budget=600, hint="Search.", groups=[skills_group(1000)])
    assert count_tokens(text) <= 600
    assert "`skills:docs`" in text and "(1000 skills)" in text and "docs__skill_report-0000" in text


def test_the_skills_descriptions_count_before_anything_is_rendered() -> None:
    # 150 names of 23 characters fit 8 characters a token of 600 tokens; with their
    # descriptions' first lines they cannot
    assert _surely_too_long((), [skills_group(150)], "descriptions", 600)
