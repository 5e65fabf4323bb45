"""The database schema in SQLAlchemy Core; Alembic migrations create and evolve it.

Times are integers: microseconds since the UNIX epoch, UTC (``*_us`` columns).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
    false,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

driver = Table(
    "driver",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("created_us", BigInteger, nullable=False),
)

token = Table(
    "token",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_us", BigInteger, nullable=False),
    Column("revoked_us", BigInteger, nullable=True),
)

token_driver = Table(
    "token_driver",
    metadata,
    Column("token_name", String(64), ForeignKey("token.name"), nullable=False),
    Column("driver_name", String(64), ForeignKey("driver.name"), nullable=False),
    PrimaryKeyConstraint("token_name", "driver_name"),
)

token_heartbeat = Table(
    "token_heartbeat",
    metadata,
    Column("token_name", String(64), ForeignKey("token.name"), nullable=False),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    PrimaryKeyConstraint("token_name", "source", "destination"),
)

dnis = Table(
    "dnis",
    metadata,
    Column("dnis", String(5), primary_key=True),
    Column("line_mask", String(9), nullable=False),
    Column("created_us", BigInteger, nullable=False),
)

account = Table(
    "account",
    metadata,
    Column("account_number", String(9), primary_key=True),
    Column("company_name", String(100), nullable=False),
    Column("street", String(100), nullable=False, default=""),
    Column("city", String(60), nullable=False, default=""),
    Column("state", String(30), nullable=False, default=""),
    Column("created_us", BigInteger, nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    Column("test_interval_s", Integer, nullable=True),
    Column("last_test_us", BigInteger, nullable=True),
    Column("test_alarm_id", BigInteger, nullable=True),
    # response data (decisions section 7): the agencies dispatched to it, its alarm permit
    # and the Argon2 hash of its duress code
    Column("police", String(16), nullable=True),
    Column("fire", String(16), nullable=True),
    Column("medical", String(16), nullable=True),
    Column("permit", String(40), nullable=True),
    Column("duress_hash", String(200), nullable=True),
    Column("phone", String(20), nullable=True),  # the premises, the first call of many plans
)

signal = Table(
    "signal",
    metadata,
    Column(
        "incident_number",
        BigInteger().with_variant(Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("code", String(4), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("token_name", String(64), nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("routed_us", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
Index(
    "ix_signal_unrouted",
    signal.c.incident_number,
    sqlite_where=signal.c.routed_us.is_(None),
    postgresql_where=signal.c.routed_us.is_(None),
)

idempotency = Table(
    "idempotency",
    metadata,
    Column("token_name", String(64), nullable=False),
    Column("idempotency_key", String(255), nullable=False),
    Column("incident_number", BigInteger, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    # what the first signal said (core.signal.digest): a retry must say the same
    Column("digest", String(32), nullable=True),
    PrimaryKeyConstraint("token_name", "idempotency_key"),
)
# the keys of one token older than its window are forgotten every second: (token, time) finds
# them without reading the token's other keys
Index("ix_idempotency_token_created", idempotency.c.token_name, idempotency.c.created_us)

heartbeat = Table(
    "heartbeat",
    metadata,
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("last_seen_us", BigInteger, nullable=False),
    Column("timeout_s", Integer, nullable=True),
    Column("failed_us", BigInteger, nullable=True),
    Column("alarm_id", BigInteger, nullable=True),
    PrimaryKeyConstraint("source", "destination"),
)

revision = Table(
    "revision",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
"""A counter per kind of provisioning data, bumped by every change so servers reload caches."""

# alarm processing ---------------------------------------------------------------------------

sequence = Table(
    "sequence",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
"""Named counters; ``incident`` gives every signal and every system event its incident number."""

alarm_type = Table(
    "alarm_type",
    metadata,
    Column("code", String(3), primary_key=True),
    Column("type", String(5), nullable=False),
    Column("restore_type", String(5), nullable=False),
    Column("priority", String(1), nullable=False),
    Column("color", String(2), nullable=False),
    Column("category", String(1), nullable=False),
    Column("restore_expected", Boolean, nullable=False),
    Column("hist_text", String(60), nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    Column("contact_list", String(16), nullable=False, server_default=""),
)
"""The station's overrides of the shipped alarm types (core/alarm_types.tsv)."""

alarm = Table(
    "alarm",
    metadata,
    Column("alarm_id", BigInteger, primary_key=True, autoincrement=False),
    Column("state", String(12), nullable=False),
    Column("account_number", String(9), nullable=False),
    Column("type", String(5), nullable=False),
    Column("priority", String(1), nullable=False),
    Column("color", String(2), nullable=False),
    Column("hist_text", String(80), nullable=False),
    Column("path", String(8), nullable=False),
    Column("code", String(4), nullable=False),
    Column("event_code", String(3), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("pending_us", BigInteger, nullable=False),
    Column("restore_us", BigInteger, nullable=True),
    Column("passcode_verified", String(1), nullable=False, default="N"),
    Column("opr", String(3), nullable=True),
    Column("taken_us", BigInteger, nullable=True),
    Column("first_call_us", BigInteger, nullable=True),
    Column("hold_until_us", BigInteger, nullable=True),
    Column("hold_reason", String(200), nullable=True),
    Column("been_on_hold", Boolean, nullable=False, server_default=false()),
    Column("resolved_us", BigInteger, nullable=True),
    Column("resolution", String(8), nullable=True),
    # an alarm never handed to this operator: the DURESS alarm of the passcode check they made
    Column("not_for_opr", String(3), nullable=True),
)
"""Alarms that need an operator: the pending queue (state ``pending``), the In Process queue
(``in_process``, with the operator in ``opr``), held alarms (``on_hold`` until
``hold_until_us``) and resolved ones (``resolved``, kept for the record)."""
Index("ix_alarm_queue", alarm.c.state, alarm.c.priority, alarm.c.pending_us, alarm.c.alarm_id)
Index("ix_alarm_open", alarm.c.account_number, alarm.c.event_code, alarm.c.area, alarm.c.zone)
Index("ix_alarm_opr", alarm.c.opr, alarm.c.state)
# the handling report reads the alarms resolved in a window of days: by time, not by reading
# every resolved alarm kept
Index("ix_alarm_resolved", alarm.c.resolved_us)

history = Table(
    "history",
    metadata,
    Column(
        "event_id",
        BigInteger().with_variant(Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    Column("account_number", String(9), nullable=False),
    Column("incident_number", BigInteger, nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("code", String(4), nullable=False),
    Column("event_code", String(3), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("type", String(5), nullable=False),
    Column("opr", String(3), nullable=True),
    Column("alarm_category", String(1), nullable=False),
    Column("priority", String(1), nullable=False),
    Column("hist_text", String(80), nullable=False),
    Column("am_notify", String(1), nullable=False, default="N"),
    Column("pr_checksum", String(8), nullable=False),
    Column("second_zone_is", String(1), nullable=False),
    Column("color", String(2), nullable=False),
    Column("video", String(1), nullable=False, default="N"),
    Column("alarm_id", BigInteger, nullable=True),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("note", String(2000), nullable=True),
)
"""Account history: one event per routed signal, system alarm, restoral and operator action."""
Index("ix_history_account_time", history.c.account_number, history.c.received_us)
Index("ix_history_incident", history.c.incident_number)

# account response data (decisions section 7) --------------------------------------------

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
    Column(
        "contact_id",
        BigInteger().with_variant(Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
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
    UniqueConstraint("account_number", "name"),
    sqlite_autoincrement=True,
)
"""The people to call for an account: one name per account (an import updates by name), up to
three phone numbers with their kinds, and the Argon2 hash of their passcode, never the code."""

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

# alarm handling (decisions section 8) -------------------------------------------------------

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
    Column(
        "dispatch_id",
        BigInteger().with_variant(Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
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

operator = Table(
    "operator",
    metadata,
    Column("code", String(3), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("role", String(10), nullable=False),
    Column("password_hash", String(200), nullable=True),
    Column("disabled", Boolean, nullable=False, default=False),
    Column("created_us", BigInteger, nullable=False),
    Column("signed_on_us", BigInteger, nullable=True),
    Column("receiving", Boolean, nullable=False, default=False),
    Column("status_us", BigInteger, nullable=True),
    Column("failed_logins", Integer, nullable=False, default=0),
    Column("locked_until_us", BigInteger, nullable=True),
)
"""Operators (OPR codes), their role, password hash (argon2), sign-on and receiving status."""

console_session = Table(
    "console_session",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("operator", String(3), ForeignKey("operator.code"), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("expires_us", BigInteger, nullable=False),
)
"""Console sign-ins: the SHA-256 of each session cookie, never the cookie itself."""
Index("ix_console_session_operator", console_session.c.operator)

resolution = Table(
    "resolution",
    metadata,
    Column("code", String(8), primary_key=True),
    Column("text", String(60), nullable=True),
    Column("updated_us", BigInteger, nullable=False),
)
"""The station's changes to the shipped resolution codes: a text adds or replaces a code, a
NULL text removes it."""

# query interface ----------------------------------------------------------------------------

api_user = Table(
    "api_user",
    metadata,
    Column("username", String(64), primary_key=True),
    Column("password_encrypted", String(512), nullable=False),
    Column("hmac_only", Boolean, nullable=False),
    Column("created_us", BigInteger, nullable=False),
)
"""Users of the query interface. Passwords are encrypted with the station's secret key: the
digest schemes need them back, so a one-way hash cannot serve."""

nonce = Table(
    "nonce",
    metadata,
    Column("username", String(64), nullable=False),
    Column("nonce", String(64), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("username", "nonce"),
)
"""Nonces seen in the last 15 minutes, per user: a second use is a replay."""
Index("ix_nonce_created", nonce.c.created_us)

# SIA DC-09 receiver -----------------------------------------------------------------------

dc09_line = Table(
    "dc09_line",
    metadata,
    Column("receiver", String(6), nullable=False),
    Column("line", String(6), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("receiver", "line"),
)
"""Which dnis (and so which line mask) a DC-09 receiver line reports on; numbers in upper-case
hex without leading zeros, ``0`` for a frame that names none."""

dc09_account = Table(
    "dc09_account",
    metadata,
    Column("account", String(16), primary_key=True),
    Column("key_encrypted", String(512), nullable=True),
    Column("supervision_s", Integer, nullable=True),
    Column("last_message_us", BigInteger, nullable=True),
    Column("receiver", String(6), nullable=True),
    Column("line", String(6), nullable=True),
    Column("failed_us", BigInteger, nullable=True),
    Column("alarm_id", BigInteger, nullable=True),
    Column("created_us", BigInteger, nullable=False),
)
"""DC-09 accounts (the transmitter account of the frame header): the AES key (encrypted with
the station's secret key), the supervision interval (NULL: the station's default, 0: off), the
last message and its line, the communication failure in progress and its alarm."""
