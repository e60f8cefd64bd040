"""Roles from the roles file (issue 29): by e-mail or OIDC group, the highest one wins,
anyone else is a viewer, and a refusal says which role an action needs."""

from __future__ import annotations

import pytest

from ui.roles import Refused, RoleTable, allows, check, read_roles, role_for


def _table(tmp_path, text: str) -> RoleTable:
    path = tmp_path / "roles.toml"
    path.write_text(text)
    return read_roles(path)


ROLES_FILE = """
group_claim = "teams"

[emails]
"Ana@Example.org" = "operator"

[groups]
"stepwise-admins" = "admin"
"stepwise-editors" = "editor"
"""


def test_roles_come_from_the_email_or_a_group_claim_and_the_highest_wins(tmp_path):
    table = _table(tmp_path, ROLES_FILE)
    assert table.problem == ""
    assert role_for("ana@example.org", {}, table) == "operator"  # e-mails match in any case
    assert role_for("ana@example.org", {"teams": ["stepwise-admins"]}, table) == "admin"
    assert role_for("bo@example.org", {"teams": "stepwise-editors"}, table) == "editor"
    assert role_for("bo@example.org", {"groups": ["stepwise-admins"]}, table) == "viewer"


def test_an_unknown_person_is_a_viewer_and_no_file_gives_no_roles(tmp_path):
    assert role_for("zed@example.org", {}, _table(tmp_path, ROLES_FILE)) == "viewer"
    assert read_roles(tmp_path / "absent.toml") == RoleTable()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[emails\n", "cannot be used"),
        ('[emails]\n"ana@example.org" = "boss"\n', "has the role 'boss'; the roles are"),
        ('emails = "ana@example.org"\n', "[emails] must be a table"),
    ],
)
def test_a_broken_roles_file_makes_everybody_a_viewer_and_says_why(tmp_path, text, words):
    table = _table(tmp_path, text)
    assert words in table.problem and "everybody is a viewer" in table.problem
    assert role_for("ana@example.org", {}, table) == "viewer"


def test_each_role_has_what_the_one_before_has_and_a_refusal_names_the_role_needed():
    assert not allows("viewer", "decide") and allows("operator", "decide")
    assert not allows("operator", "prompts") and allows("editor", "prompts")
    assert not allows("editor", "settings") and allows("admin", "settings")
    with pytest.raises(Refused) as refused:
        check("vic@example.org", "viewer", "decide")
    assert str(refused.value) == (
        "vic@example.org is signed in as a viewer: deciding approvals needs the operator "
        "role. An admin gives roles in the roles file."
    )
    check("olga@example.org", "operator", "decide")  # no refusal
