"""What the station sends out: one durable delivery mechanism (lanes in
:mod:`alarmhub.store.lanes`, queue rows written in the transaction that commits what they
report, the one worker of :mod:`alarmhub.outbound.delivery` with the retry schedule of
:mod:`alarmhub.core.delivery`) and one small sender per channel: webhooks, automation outputs,
email (:mod:`alarmhub.outbound.email`), SMS (:mod:`alarmhub.outbound.sms`)."""
