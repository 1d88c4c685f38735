"""Running ``greenroom serve`` as an operated service: probes (``health``), the HTTP front
that refuses what it cannot take and drains on stop (``http``, ``shutdown``), limits on the
calls in progress (``limits``) and structured logs (``logs``)."""
