"""Domain types and rules of a central station, free of I/O and of any web framework."""
