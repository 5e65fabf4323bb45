"""The signaling interface: ``POST /rx/<source>:<destination>/contact_id`` and ``GET .../hb``."""
