"""What every layer uses while it runs: deterministic random streams (rng, splitmix), atomic
artifacts with provenance (io), deferred imports of heavy modules (lazy) and progress lines in a
job's log (progress)."""
