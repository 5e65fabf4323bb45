"""Helpers the suite shares: the database of each test (``database``), real server processes
and the command line (``processes``), and a DC-09 panel (``dc09_panel``). Tests import them from
here; ``conftest.py`` only declares fixtures."""
