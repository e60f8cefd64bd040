"""Who is using this browser session, and whether they may do an action: the one place the
ui's actions ask (issue 29).

With no ``[auth]`` section in ``.streamlit/secrets.toml`` Stepwise is single-user, as it
always was: the person is "you", may do everything, and decisions record ``human``. With
one, Streamlit's OIDC sign-in (``st.login``) guards every page, and the person's role comes
from the roles file (``ui/roles.py``). Each guarded action calls ``require`` itself, so a
button hidden from a viewer is also refused if its callback is reached anyway. Nothing
here reads or keeps a token: Streamlit's signed cookie holds the identity claims.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from ui import roles, services, widgets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Person:
    name: str  # as a sentence names them: "you" or their e-mail
    by: str  # what a record of their decision or change stores
    role: str
    signed_in: bool


SINGLE_USER = Person(name="you", by="human", role="admin", signed_in=False)


def sign_in_configured() -> bool:
    """Is an identity provider configured (an ``[auth]`` section in the secrets)?"""
    try:
        return "auth" in st.secrets
    except Exception as exc:  # no secrets file at all, or one that is not TOML
        log.debug("no secrets to read an [auth] section from: %s", exc)
        return False


def _claims() -> dict:
    return st.user.to_dict() if st.user.get("is_logged_in") else {}


def role_table() -> roles.RoleTable:
    """The roles file as it is now: read again only when it changed (every card of the
    Approvals page asks)."""
    path = Path(services.settings().roles_file)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:  # no file: no roles
        stamp = None
    return _roles_at(path, stamp)


@functools.lru_cache(maxsize=8)
def _roles_at(path: Path, stamp: int | None) -> roles.RoleTable:
    return roles.read_roles(path)


def current() -> Person | None:
    """The person of this session; None when sign-in is on and nobody has signed in."""
    if not sign_in_configured():
        return SINGLE_USER
    claims = _claims()
    if not claims:
        return None
    email = str(claims.get("email") or "")
    name = email or str(claims.get("name") or claims.get("sub") or "someone")
    role = roles.role_for(email, claims, role_table())
    return Person(name=name, by=name, role=role, signed_in=True)


def require(action: str) -> Person:
    """The person, when their role allows ``action``; else ``roles.Refused`` in words."""
    person = current()
    if person is None:
        raise roles.Refused("Sign in first: nobody is signed in to this page.")
    roles.check(person.name, person.role, action)
    return person


def permitted(action: str, flash_key: str) -> Person | None:
    """For a button's callback: the person, or None with the refusal left for the page."""
    try:
        return require(action)
    except roles.Refused as exc:
        widgets.say(flash_key, "error", str(exc))
        return None


def may(action: str) -> bool:
    """Whether to show the controls of ``action`` (the action still checks for itself)."""
    person = current()
    return person is not None and roles.allows(person.role, action)


def role_words() -> str:
    """ "ana@example.org is a viewer", for a line in place of controls a role lacks."""
    person = current()
    return f"{person.name} is a {person.role}" if person else "nobody is signed in"


def _provider() -> str | None:
    """The provider ``st.login`` is given: None for one provider set in ``[auth]`` itself,
    else the first named one (``[auth.<name>]``)."""
    auth = st.secrets["auth"]
    if "server_metadata_url" in auth:
        return None
    named = [name for name, value in auth.items() if hasattr(value, "get")]
    return named[0] if named else None


def gate() -> None:
    """With sign-in on and nobody signed in: the sign-in page, and nothing else."""
    if current() is not None:
        return
    st.title("Stepwise")
    st.markdown("Sign in to see and run this team's multi-agent systems.")
    if st.button("Sign in", type="primary", icon=":material/login:"):
        st.login(_provider())
    st.stop()


def sidebar_line() -> None:
    """Who is signed in, and the way out; or that the app is single-user."""
    person = current()
    with st.sidebar:
        if person is None or not person.signed_in:
            st.caption("Single-user: no sign-in configured; every decision is recorded as yours.")
            return
        st.caption(f"Signed in as **{person.name}** · {person.role}")
        if problem := role_table().problem:
            st.warning(problem)
        if st.button("Sign out", icon=":material/logout:", key="access:sign-out"):
            st.logout()
