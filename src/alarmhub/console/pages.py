"""The console's two HTML pages, filled from templates in ``console/templates`` with every value
HTML-escaped; behaviour lives in ``console/static`` (no inline script, so the CSP forbids any)."""

from __future__ import annotations

import html
from functools import cache
from importlib import resources
from string import Template

from starlette.responses import HTMLResponse

from alarmhub.console import security
from alarmhub.core.operations import SUPERVISING_ROLES, Operator


@cache
def _template(name: str) -> Template:
    text = resources.files("alarmhub.console").joinpath("templates", name).read_text("utf-8")
    return Template(text)


def _fill(template: str, **values: str) -> str:
    return _template(template).substitute({k: html.escape(v) for k, v in values.items()})


def login(token: str, message: str = "", code: str = "", status: int = 200) -> HTMLResponse:
    """The sign-in form; ``token`` is the double-submit value also set as a cookie."""
    body = _fill(
        "login.html",
        csrf=token,
        message=message,
        message_hidden="" if message else "hidden",
        code=code,
    )
    return security.secure_headers(HTMLResponse(body, status_code=status))


def console(operator: Operator, csrf: str) -> HTMLResponse:
    body = _fill(
        "console.html",
        csrf=csrf,
        code=operator.code,
        name=operator.name,
        role=operator.role.value,
        supervisor="yes" if operator.role in SUPERVISING_ROLES else "no",
    )
    return security.secure_headers(HTMLResponse(body))
