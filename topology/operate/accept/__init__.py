"""`superpod accept`: measure each node, rail and SU and judge it against the plan's figures."""
