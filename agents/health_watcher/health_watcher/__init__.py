"""Self-healing for GPU nodes: faults in, drain (Slurm) / cordon (Kubernetes) and an alert out;
back in service once node_check and the per-node acceptance pass again."""
