"""Store URLs are shown without their secrets: a password in the user info and one in
the query string (``?password=``), in ``describe``, in store errors (also where the
driver quotes the URL back) and in what a run reports. The URL is shown through core's
``greenroom.kit.public_url``; a URL without a host keeps its ``//``."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from priors_testutil import Events

from greenroom import PluginWarning, Runtime
from greenroom.kit import public_url
from greenroom_priors import PriorsConfig
from greenroom_priors.events import PriorsLoaded
from greenroom_priors.store import StoreError
from greenroom_priors.stores import describe, redact
from greenroom_priors.stores.postgres import PostgresStore

SECRETS = ("s3cretpw", "hunter22")
# nothing listens on port 1: connecting fails at once, with the URL in the error
URL = "postgresql://bob:s3cretpw@127.0.0.1:1/priors?password=hunter22&connect_timeout=3&sslmode=disable"


def shows_no_secret(text: str) -> bool:
    return not any(secret in text for secret in SECRETS)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (URL, "postgresql://127.0.0.1:1/priors"),
        ("postgres://db.internal:5432/p?password=hunter22", "postgres://db.internal:5432/p"),
        ("postgresql://bob:s3cretpw@[::1]:5432/p", "postgresql://[::1]:5432/p"),
        ("postgresql://bob:s3cret%20pw@db/p#frag", "postgresql://db/p"),
        ("sqlite:///var/lib/priors.sqlite3?timeout=3", "sqlite:///var/lib/priors.sqlite3"),
        ("sqlite://state/priors.sqlite3", "sqlite://state/priors.sqlite3"),
        ("memory://tests", "memory://tests"),
        ("memory://", "memory://"),
    ],
)
def test_a_url_is_shown_without_user_info_or_query(url: str, shown: str) -> None:
    assert redact(url) == shown
    if urlsplit(url).netloc:
        assert redact(url) == public_url(url)  # core's redaction as it is, wherever there is a host


def test_a_url_that_does_not_parse_shows_only_its_scheme() -> None:
    assert redact("postgresql://bob:s3cretpw@[db/p?password=hunter22") == "postgresql://(a URL that does not parse)"


def test_describe_names_a_postgres_store_without_its_secrets() -> None:
    pytest.importorskip("psycopg")
    store = PostgresStore(URL)
    assert describe(store) == "postgresql://127.0.0.1:1/priors"


@pytest.mark.parametrize(
    "url",
    [
        URL,
        # psycopg quotes a malformed password back in its message
        "postgresql://bob:s3cretpw and more@127.0.0.1:1/priors?password=hunter22",
    ],
)
def test_a_store_error_shows_neither_password(url: str) -> None:
    pytest.importorskip("psycopg")
    store = PostgresStore(url)
    with pytest.raises(StoreError) as caught:
        store.read("agent", "tool_priors")
    message = str(caught.value)
    assert message.startswith("PostgreSQL profile store postgresql://127.0.0.1:1/priors: cannot connect")
    assert shows_no_secret(message), message


@pytest.mark.anyio
async def test_a_run_with_an_unreachable_store_reports_it_without_secrets(
    build: Callable[..., Runtime], events: Events
) -> None:
    pytest.importorskip("psycopg")
    rt = build([{"text": "done"}], config=PriorsConfig(store=URL))
    outcome = await rt.session().run("hi")
    await rt.aclose()
    assert outcome.stop_reason == "final"
    (warning, *_) = events.of(PluginWarning)
    assert "127.0.0.1:1/priors" in warning.message and shows_no_secret(warning.message), warning.message
    assert all(shows_no_secret(str(e)) for e in events.items)
    assert [e.source for e in events.of(PriorsLoaded)] == ["defaults"]
