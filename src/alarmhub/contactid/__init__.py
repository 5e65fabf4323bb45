"""Contact ID (SIA DC-05): the event table and the rules for codes, areas and zones."""

from alarmhub.contactid.table import EVENTS, EventCode, lookup

__all__ = ["EVENTS", "EventCode", "lookup"]
