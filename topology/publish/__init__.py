"""Publishing the plan into a DCIM/IPAM source of truth (Nautobot) and reading it back.

desired.py: the object set a layout calls for; nautobot.py: the REST client; sync.py: the
diff between that set and what the server holds, and applying it in bulk calls."""
