"""The primitives below every layer: the fast os slice and its platform seam, canonical JSON and
the JSON engine, timestamps, and where the data root is. Nothing here knows a ledger or a claim;
storage, launch, the MCP reader and the hooks all stand on it."""
