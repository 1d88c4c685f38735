"""``Secrets``: the set of secret values a run masks in tool results and errors, in every
form a server echoes them in (as is, base64, URL-encoded, inside a Basic header)."""

from __future__ import annotations

import base64
import threading
import time
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenroom._support.redact import (
    MASK,
    Redactor,
    Secrets,
    add_header,
    add_url,
    redact_known,
    remember_secrets,
    url_credentials,
    url_secrets,
)

TOKEN = "tok-9f8e7d6c5b4a"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_empty_set_is_false_and_masks_nothing() -> None:
    secrets = Secrets()
    assert not secrets
    assert secrets.mask(f"{TOKEN} stays") == f"{TOKEN} stays"


def test_short_values_are_ignored() -> None:
    secrets = Secrets()
    for short in ("", "a", "on", "abc"):
        secrets.add(short)
    assert not secrets
    assert secrets.mask("abc on a") == "abc on a"


def test_a_value_is_masked_wherever_it_appears() -> None:
    secrets = Secrets()
    secrets.add(TOKEN)
    assert secrets
    assert secrets.mask(f"token={TOKEN}; again {TOKEN}.") == f"token={MASK}; again {MASK}."


@pytest.mark.parametrize(
    "encoded",
    [
        b64(TOKEN),
        base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("="),
        urllib.parse.quote("p@ss w/rd+1", safe=""),
        urllib.parse.quote_plus("p@ss w/rd+1"),
    ],
)
def test_encoded_forms_are_masked(encoded: str) -> None:
    secrets = Secrets([TOKEN, "p@ss w/rd+1"])
    masked = secrets.mask(f"echo: {encoded} end")
    assert encoded not in masked
    assert masked.startswith("echo: ") and masked.endswith(" end")


def test_a_basic_header_of_a_user_password_pair_is_masked() -> None:
    secrets = Secrets()
    secrets.add(f"alice:{TOKEN}")
    header = f"Authorization: Basic {b64(f'alice:{TOKEN}')}"
    assert secrets.mask(header) == f"Authorization: Basic {MASK}"
    # the password alone is remembered too (a server quotes it without the user)
    assert TOKEN not in secrets.mask(f"bad password {TOKEN}")


@pytest.mark.parametrize("prefix", ["", "u:", "us:", "use:", "someone-else:"])
def test_a_secret_inside_longer_base64_is_cut_out(prefix: str) -> None:
    # a server echoing ``Basic base64(<any user>:<token>)``: whatever the alignment, the
    # characters that carry the token are gone
    secrets = Secrets([TOKEN])
    encoded = b64(f"{prefix}{TOKEN} and more")
    masked = secrets.mask(encoded)
    assert MASK in masked
    left, _, right = masked.partition(MASK)
    # what is left cannot hold more than a character's worth of the token's bits at each end
    assert len(left) + len(right) <= len(encoded) - len(b64(TOKEN)) + 4


def test_longest_first_masks_a_secret_containing_another_whole() -> None:
    secrets = Secrets(["abcd", "abcdefgh-long"])
    assert secrets.mask("x abcdefgh-long y abcd") == f"x {MASK} y {MASK}"


def test_secrets_sharing_a_prefix_are_each_masked_whole() -> None:
    secrets = Secrets(["secret-one", "secret-two", "secret-one-longer", "secret-o"])
    text = "secret-one-longer secret-one secret-two secret-o secret-t"
    assert secrets.mask(text) == f"{MASK} {MASK} {MASK} {MASK} secret-t"


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.text(alphabet="abc:d", min_size=4, max_size=7), max_size=6),
    text=st.text(alphabet="abc:d x", max_size=60),
)
def test_no_remembered_value_survives_masking(values: list[str], text: str) -> None:
    secrets = Secrets(values)
    masked = secrets.mask(text)
    for value in values:
        assert value not in masked


def test_merge_takes_the_other_sets_secrets() -> None:
    one, two = Secrets(["first-secret"]), Secrets(["second-secret"])
    one.merge(two)
    assert one.mask("first-secret second-secret") == f"{MASK} {MASK}"
    assert two.mask("first-secret") == "first-secret"
    one.merge(one)  # merging a set into itself changes nothing
    assert len(one) == 2


def test_adding_after_masking_takes_effect() -> None:
    secrets = Secrets(["first-secret"])
    assert secrets.mask("later-secret") == "later-secret"
    secrets.add("later-secret")
    assert secrets.mask("later-secret") == MASK


def test_repr_never_shows_a_value() -> None:
    assert TOKEN not in repr(Secrets([TOKEN]))


def test_regex_metacharacters_are_literal() -> None:
    secrets = Secrets(["a.b*c(d)"])
    assert secrets.mask("a.b*c(d) aXbbbc(d)") == f"{MASK} aXbbbc(d)"


def test_a_megabyte_text_with_many_secrets_is_masked_quickly() -> None:
    secrets = Secrets([f"secret-value-{i:04d}-x" for i in range(200)])
    text = ("ordinary words and numbers 12345 " * 32_000) + "secret-value-0199-x"
    secrets.mask("warm")  # compile once
    start = time.perf_counter()
    masked = secrets.mask(text)
    elapsed = time.perf_counter() - start
    assert masked.endswith(MASK)
    assert "secret-value" not in masked
    # a naive replace per form per pass takes far longer; the bound is loose for slow CI
    assert elapsed < 2.0


def test_concurrent_adds_and_masks() -> None:
    secrets = Secrets()
    errors: list[BaseException] = []

    def add(start: int) -> None:
        try:
            for i in range(start, start + 25):
                secrets.add(f"thread-secret-{i:05d}")
                secrets.mask(f"thread-secret-{i:05d}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n * 25,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(secrets) == 100
    assert secrets.mask("thread-secret-00099") == MASK


# ---------------------------------------------------------------- pairs, headers, URLs


def test_a_pair_is_hidden_as_a_basic_header_and_by_its_password_but_not_its_user() -> None:
    secrets = Secrets()
    secrets.add_pair("robot", TOKEN)
    assert secrets
    said = f"user robot:{TOKEN} sent Basic {b64('robot:' + TOKEN)}"
    assert secrets.mask(said) == f"user robot:{MASK} sent Basic {MASK}"
    copy = Secrets()
    copy.merge(secrets)
    assert copy.mask(said) == secrets.mask(said)


def test_a_basic_header_value_hides_its_decoded_pair() -> None:
    secrets = Secrets()
    add_header(secrets, f"Basic {b64('svc:' + TOKEN)}")
    add_header(secrets, "Bearer another-token-1")
    assert secrets.mask(f"password {TOKEN}; token another-token-1") == f"password {MASK}; token {MASK}"


def test_url_credentials_are_decoded_as_a_server_reads_them() -> None:
    url = "https://ro%40bot:p%2Fss-word@example.com/mcp?token=qt-123456"
    assert url_credentials(url) == ("ro@bot", "p/ss-word")
    assert url_credentials("https://example.com/mcp") is None
    assert {"p/ss-word", "p%2Fss-word", "qt-123456"} <= set(url_secrets(url))


def test_a_url_with_a_user_and_no_password_hides_the_basic_header_it_makes() -> None:
    # an HTTP client sends https://TOKEN@host as Basic base64("TOKEN:")
    assert url_credentials(f"https://{TOKEN}@example.com/v1") == (TOKEN, "")
    secrets = Secrets()
    add_url(secrets, f"https://{TOKEN}@example.com/v1")
    assert secrets.mask(f"got Basic {b64(TOKEN + ':')} from {TOKEN}") == f"got Basic {MASK} from {MASK}"


def test_the_process_wide_secrets_are_hidden_in_their_encoded_forms_too() -> None:
    key = "sk-process-wide-0123456789"
    remember_secrets([key])
    assert redact_known(f"key={key} b64={b64(key)}") == f"key={MASK} b64={MASK}"
    assert Redactor(["source-secret"])(f"source-secret {key}") == f"{MASK} {MASK}"
