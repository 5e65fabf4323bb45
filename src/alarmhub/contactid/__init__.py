"""Contact ID (SIA DC-05): the event table and the rules for codes, areas and zones."""

from alarmhub.contactid.fields import LETTERS, QUALIFIERS, contact_id_event
from alarmhub.contactid.table import EVENTS, EventCode, lookup

__all__ = ["EVENTS", "LETTERS", "QUALIFIERS", "EventCode", "contact_id_event", "lookup"]
