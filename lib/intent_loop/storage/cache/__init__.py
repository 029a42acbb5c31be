"""The derived cache: the checkpoint and its root (checkpoint.py), the sharded files and lazy maps
(cache_store.py), rebuild and scrub (cache_upkeep.py), the chain-broken marker, and the streamed
bulk verifier. What the project state puts in it, and how words come back from the ledger, is
the reducer's side of the contract (intent/state_cache.py)."""
