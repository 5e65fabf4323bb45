"""HTTP routes of the operator console: the page and its sign-in, the JSON API of every action
(``/console/api/...``), the live feed (``/console/events``) and the static files.

The routes translate HTTP to calls of the store's services (``store.handling``,
``store.sessions``, ...) and back; the rules are the service layer's. Refusals answer the
envelope ``{"status_code", "status": "error", "error_code", "message"}`` with the ActionRefused's
code, message and status; input the API cannot read answers 422 ``CONSOLE-INPUT`` and changes
nothing.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import tzinfo
from functools import partial
from importlib import resources
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from alarmhub import settings
from alarmhub.clock import now_us
from alarmhub.console import calls, inputs, pages, plan_actions, plumbing, security, siblings, views
from alarmhub.console.account_data import AccountData
from alarmhub.console.feed import EventStream, LiveFeed
from alarmhub.console.notify import NotifyPanel
from alarmhub.console.on_test import OnTestPanel
from alarmhub.console.outputs import OutputsPanel
from alarmhub.console.receivers import ReceiversPanel
from alarmhub.console.schedules import Schedules, alarm_block
from alarmhub.console.supervising import Supervising
from alarmhub.core import errors
from alarmhub.core.errors import ActionRefused, BadInput, SignInBusy, StoreUnavailable
from alarmhub.core.operations import Operator, operator_code_problem
from alarmhub.core.sign_in import SignInThrottle, client_key
from alarmhub.node.listener_limits import StreamBudget, StreamRefused
from alarmhub.store import handling, operations, operators, queries, resolutions, sessions
from alarmhub.store.engine import read_in_thread

log = logging.getLogger("alarmhub.console")
T = TypeVar("T")
API = "/console/api"
MAX_CODE_CHARS = 16
MAX_PASSWORD_CHARS = 1024
Handler = Callable[[Request, "Session"], Awaitable[dict[str, Any]]]
THROTTLED = "Too many failed sign-ins: wait {seconds} seconds, then try again."
BUSY_ADDRESS = "Too many sign-ins at once from this address: try again in a moment."
BUSY_NODE = "The node is busy with other sign-ins: try again in a moment."


class Writer(Protocol):
    """Runs a write in its own transaction, off the event loop (the node's writer)."""

    async def run(self, work: Callable[[Connection], T], /) -> T: ...


@dataclass(frozen=True, slots=True)
class Session:
    """A request's live console session: its operator (as of this request) and token."""

    operator: Operator
    token: str

    @property
    def code(self) -> str:
        return self.operator.code


def envelope(data: Mapping[str, Any] | None = None, status: int = 200) -> Response:
    body = {"status_code": status, "status": "success", **(data or {})}
    return security.secure_headers(
        Response(views.dumps(body), status_code=status, media_type="application/json")
    )


def error(code: str, message: str, status: int) -> Response:
    """The console's error envelope, with its security headers."""
    body = errors.envelope(status, code, message)
    return security.secure_headers(
        Response(views.dumps(body), status_code=status, media_type="application/json")
    )


def no_session() -> Response:
    return error("CONSOLE-SESSION", "sign in first: no valid console session", 401)


def bad_csrf() -> Response:
    return error("CONSOLE-CSRF", "missing or wrong X-CSRF-Token header", 403)


class StaticHeaders:
    """The console's security headers on its static files, revalidated on every load (an
    upgraded node serves new files at once)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in security.HEADERS.items():
                    headers[name] = value
                headers["Cache-Control"] = "no-cache"
            await send(message)

        await self.app(scope, receive, send_with_headers)


class Console:
    """The console's endpoints: reads from ``engine``, writes through ``writer``, the live
    feed from ``feed``; dates the station's time zone ``zone`` (the machine's when None)."""

    def __init__(
        self,
        engine: Engine,
        writer: Writer,
        feed: LiveFeed,
        budget: StreamBudget,
        zone: tzinfo | None = None,
    ) -> None:
        self.engine = engine
        self.writer = writer
        self.feed = feed
        self.budget = budget  # the listener's event streams: the feed takes a slot there
        self.zone = zone
        self.station_zone = zone if zone is not None else settings.station_zone("")
        self.throttle = SignInThrottle()
        self.passcode_throttle = SignInThrottle()  # per operator: wrong passcodes
        self.checks = security.FairChecks()
        self.unknown = security.UnknownSessions()

    # plumbing ---------------------------------------------------------------------------------

    async def read(self, work: Callable[[Connection], T]) -> T:
        return await read_in_thread(self.engine, work)

    async def write(self, work: Callable[[Connection], T]) -> T:
        return await self.writer.run(partial(operations.on_queues, work))

    async def session(self, request: Request) -> Session | None:
        """The request's live session, or None. A cookie found to be no session is remembered
        for a while (``UnknownSessions``): repeating it costs no database read."""
        token = security.session_cookie(request)
        if token is None or token in self.unknown:
            return None
        operator = await self.read(lambda c: sessions.session_operator(c, token, now_us()))
        if operator is None:
            self.unknown.add(token)
            return None
        return Session(operator, token)

    def api(self, handler: Handler, writes: bool) -> Callable[[Request], Awaitable[Response]]:
        """An API endpoint: a valid session (401), the CSRF header when it changes anything
        (403), then the handler; refusals and bad input become the error envelope."""

        async def endpoint(request: Request) -> Response:
            action = handler.__name__
            who: dict[str, str] = {}
            try:
                session = await self.session(request)
                if session is None:
                    return no_session()
                who = _who(session)
                if writes and not security.csrf_ok(request, session.token):
                    log.info("console request without a valid csrf token", extra=who)
                    return bad_csrf()
                data = await handler(request, session)
            except BadInput as exc:
                return error("CONSOLE-INPUT", exc.message, 422)
            except ActionRefused as refusal:
                if writes:
                    log.info(
                        "console action refused",
                        extra={**who, "action": action, "error_code": refusal.code},
                    )
                return error(refusal.code, refusal.message, refusal.status)
            except (StoreUnavailable, SQLAlchemyError) as exc:
                log.warning("console request failed", extra={"action": action, "error": repr(exc)})
                return error("CONSOLE-STORE", "the database is busy or unreachable; try again", 503)
            if writes:
                log.info("console action", extra={**who, "action": action})
            return envelope(data)

        return endpoint

    # pages ------------------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        session = await self.session(request)
        if session is None:
            response = security.secure_headers(RedirectResponse(security.LOGIN_PATH, 303))
            if request.cookies.get(security.SESSION_COOKIE):
                security.clear_session(response, request)
            return response
        return pages.console(session.operator, security.csrf_token(session.token))

    async def login_form(self, request: Request) -> Response:
        if await self.session(request) is not None:
            return security.secure_headers(RedirectResponse(security.CONSOLE_PATH, 303))
        return self._login_page(request)

    def _login_page(
        self, request: Request, message: str = "", code: str = "", status: int = 200
    ) -> Response:
        token = security.new_login_token()
        response = pages.login(token, message, code, status)
        security.set_login_token(response, request, token)
        return response

    async def login(self, request: Request) -> Response:
        """Sign in: the form's checks, then the throttle of this (address, code) pair before
        any password is checked, then the check in this address's turn (``FairChecks``).
        An unknown code, a wrong password and a disabled operator get one and the same 401."""
        address = request.client.host if request.client else "unknown"
        try:
            form = await plumbing.limited_form(request)
        except BadInput:
            return self._login_page(request, "The sign-in form is too large.", status=422)
        except Exception:
            return self._login_page(request, "The sign-in form could not be read.", status=422)
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        code = fields.get("code", "").strip()
        password = fields.get("password", "")
        form_token = fields.get("csrf", "")
        if not security.login_token_ok(request, form_token):
            log.info("console sign-in refused", extra={"address": address, "reason": "csrf"})
            message = "This sign-in form has expired. Please sign in again."
            return self._login_page(request, message, code[:MAX_CODE_CHARS], 403)
        if not code or not password:
            message = "Enter your operator code and your password."
            return self._login_page(request, message, code[:MAX_CODE_CHARS], 422)
        if len(code) > MAX_CODE_CHARS or len(password) > MAX_PASSWORD_CHARS:
            return self._login_page(request, "Operator code or password too long.", status=422)
        who = {"operator": _loggable(code), "address": address}
        wait = self.throttle.attempt(address, code, time.monotonic())
        if wait:
            log.warning("console sign-in throttled", extra={**who, "wait_seconds": round(wait)})
            return _refused(form_token, THROTTLED.format(seconds=math.ceil(wait)), 429, wait)
        try:
            async with self.checks.turn(client_key(address)):
                check = await self.read(lambda c: sessions.check_password(c, code, password))
            if check.matched:
                operator, token = await self.write(partial(_sign_in, check))
        except SignInBusy as busy:
            log.warning("console sign-ins queued", extra={**who, "per_address": busy.per_address})
            if busy.per_address:
                return _refused(form_token, BUSY_ADDRESS, 429, 1.0)
            return _refused(form_token, BUSY_NODE, 503, 1.0)
        except ActionRefused as refusal:  # the operator changed between the check and the session
            check = sessions.PasswordCheck(code, False, refusal.code)
        except (StoreUnavailable, SQLAlchemyError) as exc:
            log.warning("console sign-in failed", extra={"error": repr(exc)})
            message = "The database is busy or unreachable. Try again."
            return self._login_page(request, message, code, 503)
        if not check.matched:
            log.info("console sign-in refused", extra={**who, "reason": check.reason})
            refused = sessions.SIGN_IN_REFUSED
            return _refused(form_token, refused.message, refused.status)
        self.throttle.succeeded(address, code)
        log.info("console sign-in", extra={"operator": operator.code, "address": address})
        response = security.secure_headers(RedirectResponse(security.CONSOLE_PATH, 303))
        security.set_session(response, request, token)
        security.clear_login_token(response, request)
        return response

    async def logout(self, request: Request) -> Response:
        session = await self.session(request)
        if session is None:
            response = no_session()
            security.clear_session(response, request)
            return response
        if not security.csrf_ok(request, session.token):
            return bad_csrf()

        def sign_out(conn: Connection) -> int:
            sessions.end_session(conn, session.token)
            return handling.sign_off(conn, session.code, now_us())

        returned = await self.write(sign_out)
        log.info("console sign-out", extra={**_who(session), "returned_to_pending": returned})
        response = envelope({"returned_to_pending": returned})
        security.clear_session(response, request)
        return response

    async def events(self, request: Request) -> Response:
        session = await self.session(request)
        if session is None:
            return no_session()

        async def still_valid() -> bool:
            return await self.session(request) is not None

        try:
            slot = self.budget.take(request.scope)
        except StreamRefused as refused:
            return error("CONSOLE-STREAMS", refused.detail, refused.status)
        headers = {**security.HEADERS, **security.NO_STORE}
        return EventStream(self.feed, still_valid, headers, slot.release)

    # the API ----------------------------------------------------------------------------------

    async def me(self, request: Request, session: Session) -> dict[str, Any]:
        return {"operator": views.operator(session.operator), "server_us": now_us()}

    async def snapshot(self, request: Request, session: Session) -> dict[str, Any]:
        return {"snapshot": await self.feed.snapshot_now()}

    async def alarm(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
        zone = self.station_zone

        def read(conn: Connection) -> dict[str, Any]:
            found = queries.alarm_detail(conn, alarm_id)
            row = found["alarm"]
            area = row["area"] or ""
            found["schedule"] = alarm_block(conn, row["account_number"], area, now_us(), zone)
            return found

        return views.detail(await self.read(read), now_us())

    async def resolutions(self, request: Request, session: Session) -> dict[str, Any]:
        codes = await self.read(resolutions.resolution_codes)
        return {"resolutions": [{"code": k, "text": v} for k, v in codes.items()]}

    async def operators(self, request: Request, session: Session) -> dict[str, Any]:
        return {"operators": views.operators(await self.read(operators.list_operators))}

    async def stats(self, request: Request, session: Session) -> dict[str, Any]:
        counts = await self.feed.signals_per_minute()
        return {"signals_per_minute": counts, "minutes": len(counts), "server_us": now_us()}

    async def take_next(self, request: Request, session: Session) -> dict[str, Any]:
        await plumbing.json_body(request, {})
        row = await self.write(lambda c: handling.take_next(c, session.code, now_us()))
        return {"alarm": views.alarm(row, now_us()) if row else None}

    async def take(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
        await plumbing.json_body(request, {})
        row = await self.write(lambda c: handling.take(c, session.code, alarm_id, now_us()))
        return {"alarm": views.alarm(row, now_us())}

    async def take_over(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
        await plumbing.json_body(request, {})
        row = await self.write(lambda c: handling.take_over(c, session.code, alarm_id, now_us()))
        return {"alarm": views.alarm(row, now_us())}

    async def call(self, request: Request, session: Session) -> dict[str, Any]:
        return await calls.log_call(self, plumbing.json_body, request, session)

    async def passcode(self, request: Request, session: Session) -> dict[str, Any]:
        return await calls.check_passcode(self, plumbing.json_body, request, session)

    async def dispatch(self, request: Request, session: Session) -> dict[str, Any]:
        return await plan_actions.dispatch_agency(self, plumbing.json_body, request, session)

    async def step(self, request: Request, session: Session) -> dict[str, Any]:
        return await plan_actions.acknowledge_step(self, plumbing.json_body, request, session)

    async def note(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
        text = inputs.required(await plumbing.json_body(request, {"text": str}), "text")
        await self.write(lambda c: handling.add_note(c, session.code, alarm_id, text, now_us()))
        return {}

    async def hold(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
        fields = await plumbing.json_body(request, {"minutes": int, "reason": str})
        minutes = inputs.required(fields, "minutes")
        reason = inputs.required(fields, "reason")
        until = await self.write(
            lambda c: handling.hold(c, session.code, alarm_id, minutes, reason, now_us())
        )
        return {"hold_until_us": until}

    async def resolve(self, request: Request, session: Session) -> dict[str, Any]:
        return await siblings.resolve(self, plumbing.json_body, request, session)

    async def move(self, request: Request, session: Session) -> dict[str, Any]:
        return await siblings.move(self, plumbing.json_body, request, session)

    async def receiving(self, request: Request, session: Session) -> dict[str, Any]:
        """Receiving on or off; signs the operator on again when they were signed off."""
        wanted = inputs.required(
            await plumbing.json_body(request, {"receiving": bool}), "receiving"
        )

        def change(conn: Connection) -> Operator:
            if session.operator.signed_on:
                handling.set_receiving(conn, session.code, wanted, now_us())
            else:
                handling.sign_on(conn, session.code, now_us(), receiving=wanted)
            return operators.load_operator(conn, session.code)

        return {"operator": views.operator(await self.write(change))}

    # assembly ---------------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        static = resources.files("alarmhub.console").joinpath("static")
        reads: list[tuple[str, Handler]] = [
            ("/me", self.me),
            ("/snapshot", self.snapshot),
            ("/alarms/{alarm_id}", self.alarm),
            ("/resolutions", self.resolutions),
            ("/operators", self.operators),
            ("/stats", self.stats),
        ]
        writes: list[tuple[str, Handler]] = [
            ("/take-next", self.take_next),
            ("/alarms/{alarm_id}/take", self.take),
            ("/alarms/{alarm_id}/take-over", self.take_over),
            ("/alarms/{alarm_id}/call", self.call),
            ("/alarms/{alarm_id}/passcode", self.passcode),
            ("/alarms/{alarm_id}/dispatch", self.dispatch),
            ("/alarms/{alarm_id}/step", self.step),
            ("/alarms/{alarm_id}/note", self.note),
            ("/alarms/{alarm_id}/hold", self.hold),
            ("/alarms/{alarm_id}/resolve", self.resolve),
            ("/receiving", self.receiving),
            ("/accounts/{account}/move", self.move),
        ]
        return [
            Route("/console", self.page, methods=["GET"]),
            Route("/console/", _to_console, methods=["GET"]),
            Route("/console/login", self.login_form, methods=["GET"]),
            Route("/console/login", self.login, methods=["POST"]),
            Route("/console/logout", self.logout, methods=["POST"]),
            Route("/console/events", self.events, methods=["GET"]),
            *[Route(API + p, self.api(h, writes=False), methods=["GET"]) for p, h in reads],
            *[Route(API + p, self.api(h, writes=True), methods=["POST"]) for p, h in writes],
            *AccountData(self.engine, self.api).routes(API),
            *Supervising(self, plumbing.json_body, self.zone).routes(self.api, API),
            *OnTestPanel(self, plumbing.json_body).routes(self.api, API),
            *ReceiversPanel(self).routes(self.api, API),
            *OutputsPanel(self).routes(self.api, API),
            *NotifyPanel(self, plumbing.json_body, self.station_zone).routes(self.api, API),
            *Schedules(self, plumbing.json_body, self.station_zone).routes(self.api, API),
            Mount(
                "/console/static",
                app=StaticHeaders(StaticFiles(directory=str(static))),
                name="console-static",
            ),
        ]


def _sign_in(check: sessions.PasswordCheck, conn: Connection) -> tuple[Operator, str]:
    """A session for a matched password, and the operator signed on, receiving."""
    now = now_us()
    operator, token = sessions.sign_in(conn, check, now)
    handling.sign_on(conn, operator.code, now, receiving=True)
    return operator, token


def _refused(form_token: str, message: str, status: int, retry: float = 0.0) -> Response:
    """A refused sign-in: the form again with ``message``, the code field empty and the form's
    own token (its cookie stays as it is), so that the answer depends on nothing but the
    reason: the same bytes for an unknown code, a wrong password and a disabled operator."""
    response = pages.login(form_token, message, "", status)
    if retry:
        response.headers["Retry-After"] = str(math.ceil(retry))
    return response


async def _to_console(_: Request) -> Response:
    return security.secure_headers(RedirectResponse(security.CONSOLE_PATH, 303))


def _loggable(code: str) -> str:
    """A submitted operator code for the log, unless it cannot be one (someone typed their
    password into the code field)."""
    return code if operator_code_problem(code) is None else "(not an operator code)"


def _who(session: Session) -> dict[str, str]:
    return {"operator": session.code}


def routes(
    engine: Engine,
    writer: Writer,
    feed: LiveFeed,
    budget: StreamBudget,
    zone: tzinfo | None = None,
) -> list[BaseRoute]:
    """The console's routes (mounted with the query interface); the live feed's streams take
    their slots in ``budget``."""
    return Console(engine, writer, feed, budget, zone).routes()
