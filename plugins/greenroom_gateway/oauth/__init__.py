"""OAuth 2.1 for the gateway as a resource server: ``settings`` (``[serve.oauth]`` and the
flags, checked), ``tokens`` (JWT access tokens, checked against the issuer's keys),
``views`` (who calls, and what a caller's scopes let its run see)."""
