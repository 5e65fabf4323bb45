"""The monitoring query interface: ``POST /rest/rest.php`` with XMHIST, XMAPEND, XMAINPRO."""
