"""The checks interface (checks_interface) and its generic helpers
(checks_helpers), standard library only."""
