"""Publishing the plan into a DCIM/IPAM source of truth (Nautobot) and reading it back.

The object set a layout calls for is topology/render/dcim.py; here: nautobot.py, the REST client;
kinds.py, the object types (one Kind each, parents first); sync_types.py, what a sync compares and
reports; sync.py, the engine: the diff between the set and what the server holds, applied in bulk."""
