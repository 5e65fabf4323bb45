"""Account response data and alarm handling: zones, panel users, contacts, call lists, agencies,
calls, action plans, dispatches and the steps done."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
)

from alarmhub.store.schema.base import metadata, serial

account_zone = Table(
    "account_zone",
    metadata,
    Column("account_number", String(9), ForeignKey("account.account_number"), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("area", String(2), nullable=False),
    Column("description", String(40), nullable=False),
    Column("equipment", String(30), nullable=False, server_default=""),
    PrimaryKeyConstraint("account_number", "zone", "area"),
)
"""What each zone of an account's panel is; area ``''`` applies in every area."""

account_user = Table(
    "account_user",
    metadata,
    Column("account_number", String(9), ForeignKey("account.account_number"), nullable=False),
    Column("user_number", String(3), nullable=False),
    Column("name", String(60), nullable=False),
    PrimaryKeyConstraint("account_number", "user_number"),
)
"""The users of an account's panel, by the number the panel reports."""

contact = Table(
    "contact",
    metadata,
    serial("contact_id"),
    Column("account_number", String(9), ForeignKey("account.account_number"), nullable=False),
    Column("name", String(60), nullable=False),
    Column("phone1", String(20), nullable=False, server_default=""),
    Column("kind1", String(6), nullable=False, server_default=""),
    Column("phone2", String(20), nullable=False, server_default=""),
    Column("kind2", String(6), nullable=False, server_default=""),
    Column("phone3", String(20), nullable=False, server_default=""),
    Column("kind3", String(6), nullable=False, server_default=""),
    Column("email", String(120), nullable=False, server_default=""),
    Column("relation", String(30), nullable=False, server_default=""),
    Column("notes", String(500), nullable=False, server_default=""),
    Column("passcode_hash", String(200), nullable=True),
    Column("updated_us", BigInteger, nullable=False),
    Column("notify", String(60), nullable=False, server_default=""),
    Column("notify_by", String(20), nullable=False, server_default=""),
    UniqueConstraint("account_number", "name"),
    sqlite_autoincrement=True,
)
"""The people to call for an account: one name per account (an import updates by name), up to
three phone numbers with their kinds, and the Argon2 hash of their passcode, never the code;
the kinds of notification they subscribe to and by which channels (space-separated; decisions
section 13)."""

call_list_entry = Table(
    "call_list_entry",
    metadata,
    Column("account_number", String(9), nullable=False),
    Column("list_name", String(16), nullable=False),
    Column("contact_id", BigInteger, ForeignKey("contact.contact_id"), nullable=False),
    Column("position", Integer, nullable=False),
    PrimaryKeyConstraint("account_number", "list_name", "contact_id"),
)
"""The named, ordered call lists of an account: its contacts in the order they are called."""
Index("ix_call_list_entry_contact", call_list_entry.c.contact_id)

agency = Table(
    "agency",
    metadata,
    Column("code", String(16), primary_key=True),
    Column("kind", String(8), nullable=False),
    Column("name", String(60), nullable=False),
    Column("phone", String(20), nullable=False, server_default=""),
    Column("updated_us", BigInteger, nullable=False),
)
"""Police, fire and medical dispatch points, kept station-wide and assigned to accounts."""

call_attempt = Table(
    "call_attempt",
    metadata,
    Column("alarm_id", BigInteger, nullable=False),
    Column("at_us", BigInteger, nullable=False),
    Column("contact_id", BigInteger, nullable=True),
    Column("phone", String(20), nullable=False),
    Column("outcome", String(12), nullable=False),
    Column("opr", String(3), nullable=False),
)
"""The calls an operator made for an alarm, with whom and how each ended: the alarm screen
marks who has been tried (the history record of each call says it in words)."""
Index("ix_call_attempt_alarm", call_attempt.c.alarm_id)

plan_step = Table(
    "plan_step",
    metadata,
    Column("alarm_type", String(5), nullable=False),
    Column("account_number", String(9), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("position", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("agency", String(8), nullable=False, server_default=""),
    Column("required", Boolean, nullable=False),
    Column("text", String(200), nullable=False, server_default=""),
    PrimaryKeyConstraint("alarm_type", "account_number", "zone", "position"),
)
"""The station's action plans, which replace the shipped ones: the steps of an alarm TYPE's plan
in order, for every account (``account_number`` and ``zone`` empty), for one account (``zone``
empty), or for one zone of one account."""

type_handling = Table(
    "type_handling",
    metadata,
    Column("alarm_type", String(5), primary_key=True),
    Column("ecv", Boolean, nullable=True),
    Column("storm_since_us", BigInteger, nullable=True),
    Column("storm_by", String(3), nullable=True),
    Column("updated_us", BigInteger, nullable=False),
)
"""How the alarms of a TYPE are handled, where the station changed it: enhanced call
verification before a dispatch (NULL: the shipped rule), and storm mode since when and by whom."""

dispatch = Table(
    "dispatch",
    metadata,
    serial("dispatch_id"),
    Column("alarm_id", BigInteger, nullable=False),
    Column("account_number", String(9), nullable=False),
    Column("agency", String(8), nullable=False),
    Column("agency_code", String(16), nullable=True),
    Column("avs", Integer, nullable=False),
    Column("reference", String(40), nullable=False, server_default=""),
    Column("opr", String(3), nullable=False),
    Column("at_us", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)
"""Agencies dispatched for alarms: which (police, fire, medical, and the account's agency of that
kind), the AVS-01 level the operator assigned, the agency's reference, who and when."""
Index("ix_dispatch_alarm", dispatch.c.alarm_id)

step_done = Table(
    "step_done",
    metadata,
    Column("alarm_id", BigInteger, nullable=False),
    Column("position", Integer, nullable=False),
    Column("opr", String(3), nullable=False),
    Column("at_us", BigInteger, nullable=False),
    Column("note", String(2000), nullable=False),
    PrimaryKeyConstraint("alarm_id", "position"),
)
"""Steps of an alarm's plan that nothing else shows done (review video, an instruction), as the
operator acknowledged them, with their note."""
Index("ix_dispatch_time", dispatch.c.at_us)

# operators ---------------------------------------------------------------------------------
