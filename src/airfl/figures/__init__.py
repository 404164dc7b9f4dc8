"""The figure theme and deterministic saving (plotting) and one colour and marker per scheme
(styles)."""
