"""What the station sends out: one durable delivery mechanism (lanes in
:mod:`alarmhub.store.lanes`, queue rows written in the transaction that commits what they
report) and one small sender per channel: webhooks, automation outputs."""
