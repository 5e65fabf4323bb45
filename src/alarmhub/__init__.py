"""alarmhub: alarm signaling and monitoring service for alarm-monitoring central stations."""

__version__ = "0.1.0"
