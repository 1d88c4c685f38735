"""Tool parameter schemas: derived from Python types, checked for use, their references,
and arguments validated fast."""
