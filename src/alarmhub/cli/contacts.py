"""Contact commands (decisions section 7): the people called for an account, their numbers,
the call lists they are on and in which order, and their passcodes (kept only as Argon2
hashes; never shown).

A phone is given as ``NUMBER`` (a mobile) or ``KIND:NUMBER`` (``home:555-0100``), at most three
per contact. A call list place is ``--list NAME`` (last on the list) or ``--list NAME:ORDER``
(1 is called first; those from that order on move down one); ``--order N`` with a single
``--list`` (or none: PRIMARY) is the same as ``--list NAME:N``. ``--notify KIND`` and
``--notify-by CHANNEL`` subscribe a contact to notifications (decisions section 13).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from alarmhub.cli.csv_import import import_command, order_of
from alarmhub.cli.output import (
    DATABASE_ID,
    CommandError,
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    secret_option,
    table,
)
from alarmhub.core import response as rules
from alarmhub.core.notifications import CHANNELS, KINDS

if TYPE_CHECKING:
    from collections.abc import Callable

    from alarmhub.store.contacts import Placement


def phones_of(given: tuple[str, ...]) -> tuple[rules.Phone, ...]:
    """The phones of ``--phone`` options: ``NUMBER`` (mobile) or ``KIND:NUMBER``."""
    phones = []
    for text in given:
        kind, _, number = text.rpartition(":")
        try:
            phones.append(rules.Phone(number.strip(), rules.phone_kind(kind)))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    return tuple(phones)


def placements(lists: tuple[str, ...], order: int | None) -> list[Placement]:
    """The call list places of ``--list NAME[:ORDER]`` options and ``--order``."""
    from alarmhub.store.contacts import placement

    if order is not None and len(lists) > 1:
        raise CommandError("--order goes with one --list; give several as --list NAME:ORDER")
    if order is not None and not lists:
        lists = (rules.DEFAULT_CALL_LIST,)
    places = []
    for text in lists:
        name, colon, at = text.partition(":")
        if colon and order is not None:
            raise CommandError(f"--list {text} names its order: leave out --order")
        places.append(placement(name, order_of(at) if colon else order))
    return places


NONE = "none"


def chosen(values: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds or channels of ``--notify`` or ``--notify-by`` options ('none': none)."""
    if NONE in values and len(values) > 1:
        raise CommandError("'none' goes alone")
    return tuple(v for v in values if v != NONE)


def _passcode_hash(passcode: str | None) -> str | None:
    from alarmhub.store.response import hash_passcode

    return hash_passcode(passcode) if passcode is not None else None


def details(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``contact add`` and ``contact update`` share."""
    options = [
        click.option(
            "--phone",
            "phones",
            multiple=True,
            metavar="[KIND:]NUMBER",
            help="A number to call (up to 3, in the order called); KIND is mobile (the "
            "default), home or work.",
        ),
        click.option("--email", help="E-mail address (messages go there with --notify-by email)."),
        click.option(
            "--notify",
            "notify",
            multiple=True,
            type=click.Choice((*KINDS, NONE)),
            help="A kind of notification the contact gets (repeat for several): alarm, trouble, "
            "openclose, schedule, test; 'none' for no notification. With update, replaces them.",
        ),
        click.option(
            "--notify-by",
            "notify_by",
            multiple=True,
            type=click.Choice((*CHANNELS, NONE)),
            help="How notifications reach the contact (repeat for both): email (its --email), "
            "sms (its first mobile phone); 'none' for neither. With update, replaces them.",
        ),
        click.option("--relation", help="Who the contact is to the subscriber, e.g. owner."),
        click.option("--notes", help="What operators should know."),
        click.option(
            "--list",
            "lists",
            multiple=True,
            metavar="NAME[:ORDER]",
            help="A call list to be on (repeat for several); ORDER 1 is called first, none "
            "puts the contact last.",
        ),
        click.option(
            "--order", type=int, help="The place on the one --list (or PRIMARY when none)."
        ),
        secret_option(
            "--passcode",
            envvar="ALARMHUB_PASSCODE",
            what="passcode",
            help="The passcode the contact gives operators, 3-32 characters; kept only as a hash",
            ask_when_missing=False,
            confirm=True,
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group("contact")
def contact_group() -> None:
    """Whom operators call for an account, on which call lists, in which order."""


contact_group.add_command(import_command("contact"))


def _shown(engine: Any, account_number: str, contact_id: int) -> dict[str, Any]:
    from alarmhub.store import contacts as contact_store

    return next(
        c for c in contact_store.list_contacts(engine, account_number) if c["id"] == contact_id
    )


@contact_group.command("add")
@click.argument("account_number", metavar="ACCOUNT")
@click.option("--name", required=True, help="The contact's name, unique within the account.")
@details
@data_dir_option
@json_option
@provisioning_errors
def contact_add(
    account_number: str,
    name: str,
    phones: tuple[str, ...],
    email: str | None,
    notify: tuple[str, ...],
    notify_by: tuple[str, ...],
    relation: str | None,
    notes: str | None,
    lists: tuple[str, ...],
    order: int | None,
    passcode: str | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Add a contact of ACCOUNT, on the call lists named (none: last on PRIMARY)."""
    from alarmhub.store import contacts as contact_store

    contact = rules.Contact(
        account_number, name, phones_of(phones), email or "", relation or "", notes or "",
        chosen(notify), chosen(notify_by),
    )  # fmt: skip
    places = placements(lists, order)
    engine = open_store(data_dir)
    contact_id = contact_store.add_contact(engine, contact, places, _passcode_hash(passcode))
    emit(
        as_json,
        _shown(engine, account_number, contact_id),
        lambda: click.echo(f"account {account_number} contact {contact_id} ({name}) added"),
    )


@contact_group.command("update")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("contact_id", type=DATABASE_ID)
@click.option("--name", help="A new name.")
@details
@click.option("--off-list", "off_lists", multiple=True, metavar="NAME", help="Leave this list.")
@click.option("--clear-passcode", is_flag=True, help="Remove the contact's passcode.")
@data_dir_option
@json_option
@provisioning_errors
def contact_update(
    account_number: str,
    contact_id: int,
    name: str | None,
    phones: tuple[str, ...],
    email: str | None,
    notify: tuple[str, ...],
    notify_by: tuple[str, ...],
    relation: str | None,
    notes: str | None,
    lists: tuple[str, ...],
    order: int | None,
    passcode: str | None,
    off_lists: tuple[str, ...],
    clear_passcode: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Change contact CONTACT_ID of ACCOUNT: what is named changes, the rest stays. --phone
    replaces every number; --list places the contact (or moves it on a list it is on)."""
    from alarmhub.store import contacts as contact_store

    if passcode is not None and clear_passcode:
        raise CommandError("give --passcode or --clear-passcode, not both")
    changes: dict[str, Any] = {
        key: value
        for key, value in (
            ("name", name),
            ("email", email),
            ("relation", relation),
            ("notes", notes),
        )
        if value is not None
    }
    if phones:
        changes["phones"] = phones_of(phones)
    if notify:
        changes["notify"] = chosen(notify)
    if notify_by:
        changes["notify_by"] = chosen(notify_by)
    row = contact_store.update_contact(
        open_store(data_dir),
        account_number,
        contact_id,
        changes,
        placements(lists, order),
        off_lists,
        _passcode_hash(passcode),
        clear_passcode,
    )
    emit(as_json, row, lambda: click.echo(f"account {account_number} contact {contact_id} updated"))


@contact_group.command("remove")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("contact_id", type=DATABASE_ID)
@data_dir_option
@json_option
@provisioning_errors
def contact_remove(
    account_number: str, contact_id: int, data_dir: Path | None, as_json: bool
) -> None:
    """Remove contact CONTACT_ID of ACCOUNT (and take it off every call list)."""
    from alarmhub.store import contacts as contact_store

    contact_store.remove_contact(open_store(data_dir), account_number, contact_id)
    emit(
        as_json,
        {"account_number": account_number, "id": contact_id, "removed": True},
        lambda: click.echo(f"account {account_number} contact {contact_id} removed"),
    )


@contact_group.command("list")
@click.argument("account_number", metavar="ACCOUNT")
@data_dir_option
@json_option
@provisioning_errors
def contact_list(account_number: str, data_dir: Path | None, as_json: bool) -> None:
    """List the contacts of ACCOUNT with their numbers and call lists (never passcodes), in
    calling order: PRIMARY's by their order, then the other lists' (by name), then those on no
    list."""
    from alarmhub.store import contacts as contact_store

    rows = contact_store.in_calling_order(
        contact_store.list_contacts(open_store(data_dir), account_number)
    )
    shown = [
        {
            **row,
            "phones": [f"{p['kind']}:{p['number']}" for p in row["phones"]],
            "lists": [f"{place['name']}:{place['order']}" for place in row["lists"]],
            "has_passcode": "yes" if row["has_passcode"] else "no",
            "notify": " ".join(row["notify"])
            + (" by " + " ".join(row["notify_by"]) if row["notify"] else ""),
        }
        for row in rows
    ]
    columns = [
        ("id", "ID"),
        ("name", "NAME"),
        ("phones", "PHONES"),
        ("lists", "LISTS"),
        ("relation", "RELATION"),
        ("email", "EMAIL"),
        ("notify", "NOTIFY"),
        ("has_passcode", "PASSCODE"),
    ]
    emit(as_json, rows, lambda: table(shown, columns, f"account {account_number} has no contacts"))
