"""A model's Markdown shown inside a page: headings demoted (ui/model_text.py)."""

from ui.model_text import demote_headings


def test_headings_become_smaller_than_the_pages_own():
    text = "# Title\n\nBody\n## Part\n###### Deep\n#hashtag stays"
    assert demote_headings(text) == ("#### Title\n\nBody\n##### Part\n###### Deep\n#hashtag stays")


def test_underlined_headings_are_demoted_and_rules_and_lists_kept():
    text = "Title\n=====\n\nSub\n---\n\n---\n- a\n---"
    assert demote_headings(text) == "#### Title\n\n#### Sub\n\n---\n- a\n---"


def test_code_fences_are_left_alone():
    text = "```\n# a comment\n```\n# Heading"
    assert demote_headings(text) == "```\n# a comment\n```\n#### Heading"
