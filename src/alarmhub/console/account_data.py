"""The console's data entry of an account's response data (decisions section 7), for admins:
its zones, panel users, contacts and their call lists, its agencies, permit and duress code.

Every endpoint goes through the console's ``api`` wrapper (session 401, CSRF 403, the error
envelope), then refuses anyone but an admin (403 ``OPS-ROLE``). Changes are made by the store's
data-entry functions (:mod:`alarmhub.store.response`), the ones the command line calls, so the
console checks exactly what the CLI checks; their refusals (``ProvisioningError``) answer 422
``CONSOLE-DATA`` with the store's message. Every change answers the account as it now is.

Those functions take the engine and open their own write transaction, as the CLI does while a
node runs: they run in a worker thread on the console's engine, not through the node's writer,
whose one thread serves the queue-changing operator actions (each a function of the writer's
connection, after the incident lock) and has no business waiting on data entry or on the Argon2
hash of a passcode. A passcode is hashed before any transaction, sent once, and never answered:
a contact shows only ``has_passcode``.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Engine
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from alarmhub.console import inputs, plumbing
from alarmhub.core import response as rules
from alarmhub.core.account import account_number_problem
from alarmhub.core.errors import ActionRefused, BadInput, ProvisioningError
from alarmhub.core.operations import Role
from alarmhub.core.response import Contact, PanelUser, Phone, Zone
from alarmhub.store import contacts as contact_store
from alarmhub.store import response, schema
from alarmhub.store.alarm_response import AGENCY_KINDS, account_response

if TYPE_CHECKING:
    from alarmhub.console.routes import Handler, Session

T = TypeVar("T")
Api = Callable[["Handler", bool], Callable[[Request], Awaitable[Response]]]
ACCOUNT = schema.account.c
ACCOUNT_FIELDS = ("account_number", "company_name", "street", "city", "state")
CONTACT_FIELDS = {"name": str, "email": str, "relation": str, "notes": str, "phones": list}
ADMINS_ONLY = ActionRefused("OPS-ROLE", "only an admin can change an account's data", 403)


class AccountData:
    """The data-entry endpoints, under ``/console/api/accounts/{account}``."""

    def __init__(self, engine: Engine, api: Api) -> None:
        self.engine = engine
        self.api = api

    def routes(self, prefix: str) -> list[BaseRoute]:
        base = f"{prefix}/accounts/{{account}}"
        contact = f"{base}/contacts/{{contact_id}}"
        writes: list[tuple[str, Handler]] = [
            (f"{base}/zones", self.set_zone),
            (f"{base}/zones/remove", self.remove_zone),
            (f"{base}/users", self.set_user),
            (f"{base}/users/remove", self.remove_user),
            (f"{base}/contacts", self.add_contact),
            (contact, self.update_contact),
            (f"{contact}/remove", self.remove_contact),
            (f"{base}/response", self.set_response),
        ]
        return [
            Route(base, self.api(self.account, False), methods=["GET"]),
            *[Route(path, self.api(h, True), methods=["POST"]) for path, h in writes],
        ]

    # plumbing ---------------------------------------------------------------------------------

    async def _change(
        self, request: Request, session: Session, allowed: Mapping[str, type]
    ) -> tuple[str, dict[str, Any]]:
        """An admin's change: the account of the path and the body's fields."""
        number = _admitted(request, session)
        return number, await plumbing.json_body(request, allowed)

    async def _store(self, work: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(work)
        except ProvisioningError as exc:
            raise ActionRefused("CONSOLE-DATA", str(exc), 422) from None

    async def _answer(self, number: str) -> dict[str, Any]:
        return {"account": await self._store(partial(self._view, number))}

    def _view(self, number: str) -> dict[str, Any]:
        """Everything the page shows of one account (never a passcode or its hash)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(*(ACCOUNT[f] for f in (*ACCOUNT_FIELDS, *AGENCY_KINDS))).where(
                    ACCOUNT.account_number == number
                )
            ).first()
            if row is None:
                raise ActionRefused("CONSOLE-NOACCOUNT", f"no account {number!r}", 404)
            assigned = account_response(conn, number)
        contacts = contact_store.list_contacts(self.engine, number)
        facts = dict(row._mapping)
        return {
            **{name: facts[name] for name in ACCOUNT_FIELDS},
            "zones": response.list_zones(self.engine, number),
            "users": response.list_users(self.engine, number),
            "contacts": contacts,
            "call_lists": call_lists(contacts),
            "permit": assigned["permit"],
            "has_duress_code": assigned["has_duress_code"],
            "assigned": {kind: facts[kind] or "" for kind in AGENCY_KINDS},
            "agencies": response.list_agencies(self.engine),
        }

    # the endpoints ----------------------------------------------------------------------------

    async def account(self, request: Request, session: Session) -> dict[str, Any]:
        return await self._answer(_admitted(request, session))

    async def set_zone(self, request: Request, session: Session) -> dict[str, Any]:
        allowed = {"zone": str, "area": str, "description": str, "equipment": str}
        number, fields = await self._change(request, session, allowed)
        zone = Zone(
            account_number=number,
            zone=inputs.required(fields, "zone").strip(),
            description=inputs.required(fields, "description"),
            area=fields.get("area", "").strip(),
            equipment=fields.get("equipment", ""),
        )
        await self._store(partial(response.set_zone, self.engine, zone))
        return await self._answer(number)

    async def remove_zone(self, request: Request, session: Session) -> dict[str, Any]:
        number, fields = await self._change(request, session, {"zone": str, "area": str})
        zone = inputs.required(fields, "zone").strip()
        area = fields.get("area", "").strip()
        await self._store(partial(response.remove_zone, self.engine, number, zone, area))
        return await self._answer(number)

    async def set_user(self, request: Request, session: Session) -> dict[str, Any]:
        number, fields = await self._change(request, session, {"user": str, "name": str})
        user = PanelUser(
            number, inputs.required(fields, "user").strip(), inputs.required(fields, "name")
        )
        await self._store(partial(response.set_user, self.engine, user))
        return await self._answer(number)

    async def remove_user(self, request: Request, session: Session) -> dict[str, Any]:
        number, fields = await self._change(request, session, {"user": str})
        user = inputs.required(fields, "user").strip()
        await self._store(partial(response.remove_user, self.engine, number, user))
        return await self._answer(number)

    async def add_contact(self, request: Request, session: Session) -> dict[str, Any]:
        allowed = {**CONTACT_FIELDS, "lists": list, "passcode": str}
        number, fields = await self._change(request, session, allowed)

        def add() -> None:
            contact = Contact(
                account_number=number,
                name=inputs.required(fields, "name"),
                phones=_phones(fields.get("phones", [])),
                email=fields.get("email", ""),
                relation=fields.get("relation", ""),
                notes=fields.get("notes", ""),
            )
            lists = _placements(fields.get("lists", []))
            hashed = _hashed(fields.get("passcode", ""))
            contact_store.add_contact(self.engine, contact, lists, hashed)

        await self._store(add)
        return await self._answer(number)

    async def update_contact(self, request: Request, session: Session) -> dict[str, Any]:
        allowed = {
            **CONTACT_FIELDS,
            "lists": list,
            "off_lists": list,
            "passcode": str,
            "clear_passcode": bool,
        }
        number, fields = await self._change(request, session, allowed)
        contact_id = _contact_id(request.path_params["contact_id"])

        def update() -> None:
            changes: dict[str, Any] = {
                k: fields[k] for k in ("name", "email", "relation", "notes") if k in fields
            }
            if "phones" in fields:
                changes["phones"] = _phones(fields["phones"])
                if not changes["phones"]:
                    raise ProvisioningError("a contact keeps at least one phone number: give one")
            off = fields.get("off_lists", [])
            if not all(isinstance(name, str) for name in off):
                raise BadInput("field 'off_lists' must be an array of call list names")
            contact_store.update_contact(
                self.engine,
                number,
                contact_id,
                changes,
                lists=_placements(fields.get("lists", [])),
                off_lists=off,
                passcode_hash=_hashed(fields.get("passcode", "")),
                clear_passcode=fields.get("clear_passcode", False),
            )

        await self._store(update)
        return await self._answer(number)

    async def remove_contact(self, request: Request, session: Session) -> dict[str, Any]:
        number, _ = await self._change(request, session, {})
        contact_id = _contact_id(request.path_params["contact_id"])
        await self._store(partial(contact_store.remove_contact, self.engine, number, contact_id))
        return await self._answer(number)

    async def set_response(self, request: Request, session: Session) -> dict[str, Any]:
        allowed = {
            **dict.fromkeys(AGENCY_KINDS, str),
            "permit": str,
            "duress_code": str,
            "clear_duress": bool,
        }
        number, fields = await self._change(request, session, allowed)

        def assign() -> None:
            response.set_account_response(
                self.engine,
                number,
                {kind: fields[kind].strip() for kind in AGENCY_KINDS if kind in fields},
                permit=fields.get("permit"),
                duress_hash=_hashed(fields.get("duress_code", "")),
                clear_duress=fields.get("clear_duress", False),
            )

        await self._store(assign)
        return await self._answer(number)


def _admitted(request: Request, session: Session) -> str:
    """The account number of the path, once the operator is known to be an admin."""
    if session.operator.role is not Role.ADMIN:
        raise ADMINS_ONLY
    number: str = request.path_params["account"]
    problem = account_number_problem(number)
    if problem:
        raise BadInput(problem)
    return number


def _contact_id(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 < len(text) <= 18 or int(text) < 1:
        raise BadInput(f"contact id must be a positive whole number, not {text[:20]!r}")
    return int(text)


def _phones(given: list[Any]) -> tuple[Phone, ...]:
    """The phones of a body: ``[{"number": "...", "kind": "mobile"}]``; empty numbers skipped."""
    phones = []
    for item in given:
        if (
            not isinstance(item, dict)
            or not set(item) <= {"number", "kind"}
            or not all(isinstance(v, str) for v in item.values())
        ):
            raise BadInput('each phone must be {"number": "...", "kind": "mobile|home|work"}')
        number = item.get("number", "").strip()
        if not number:
            continue
        try:
            kind = rules.phone_kind(item.get("kind", ""))
        except ValueError as exc:
            raise ProvisioningError(str(exc)) from None
        phones.append(Phone(number, kind))
    return tuple(phones)


def _placements(given: list[Any]) -> list[contact_store.Placement]:
    """The call lists of a body: ``[{"name": "PRIMARY", "order": 1}]`` (order optional)."""
    placed = []
    for item in given:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not set(item) <= {"name", "order"}
            or not isinstance(item.get("order", 0), int)
            or isinstance(item.get("order"), bool)
        ):
            raise BadInput('each call list must be {"name": "PRIMARY", "order": 1}')
        placed.append(contact_store.placement(item["name"], item.get("order")))
    return placed


def _hashed(passcode: str) -> str | None:
    """The Argon2 hash of a passcode typed in a form, or None when none was typed."""
    return response.hash_passcode(passcode) if passcode else None


def call_lists(contacts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The account's call lists, by name, each its contacts in the order they are called."""
    lists: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for contact in contacts:
        for entry in contact["lists"]:
            lists[entry["name"]].append(
                {"id": contact["id"], "name": contact["name"], "order": entry["order"]}
            )
    return [
        {"name": name, "contacts": sorted(entries, key=lambda e: (e["order"], e["id"]))}
        for name, entries in sorted(lists.items(), key=lambda item: rules.call_list_rank(item[0]))
    ]
