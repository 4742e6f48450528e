"""Privacy mechanisms and accounting (each mechanism exposes its exact law and privacy cost)."""
