"""What runs a node: the composition root (:mod:`.app`), the HTTP server, the worker and writer
processes around it, the listeners' limits and the supervision held in memory."""
