"""The operator console: a live web page for the alarm life cycle at ``/console`` (sign-in,
queues, the alarm screen and its actions), its JSON API and its server-sent event feed."""

from alarmhub.console.feed import LiveFeed
from alarmhub.console.routes import routes

__all__ = ["LiveFeed", "routes"]
