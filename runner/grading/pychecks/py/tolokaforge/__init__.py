"""Tolokaforge's checks interface for Python custom checks, as the operator's
check runner provides it: the names a pack's checks.py imports, and nothing else
of the upstream package."""
