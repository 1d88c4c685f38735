"""What an image or a sound costs the model, in tokens, before it is sent.

Providers bill an image by its pixels, each its own way, after scaling it to their
limits, so an image's cost is worked out from its width and height per provider family:

- ``anthropic``: scaled to at most 1568 px on its long edge and about 1.15 megapixels,
  then ``width * height / 750`` tokens (Anthropic's published rule; at most about 1,600);
- ``openai`` (high detail): scaled to fit 2048 x 2048, then its short edge to at most
  768 px, then 170 tokens per 512 px tile plus 85 (OpenAI's published rule for GPT-4o and
  GPT-4.1; at most 1,445);
- any other model: the larger of the two, so a budget is never under-counted.

The width and height come from the image's header, read with Pillow when it is
installed (it opens the header only; nothing is decoded). Without Pillow, or for an
image it cannot read, they are guessed from its size in bytes: one pixel per byte, as a
square (compressed images hold more pixels than bytes, so the guess leans high for
small images and is capped at the family's largest cost for big ones).

A sound costs 32 tokens a second (the highest rate providers publish for audio input),
its length read from a WAV header, else guessed at 16 KB a second (128 kbit/s).

Estimates are kept per part (``media_tokens`` remembers the last few thousand, by a hash
of their data, never the data itself), so a part counted when its result came back costs
nothing when each later request counts it again.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import threading

from greenroom.tools.base import MediaPart

ANTHROPIC = "anthropic"
OPENAI = "openai"

HEADER_CHARS = 256 * 1024
"""Base64 characters decoded to find an image's header (192 KB: past large EXIF and
colour-profile blocks that come before a JPEG's frame header)."""

AUDIO_TOKENS_PER_SECOND = 32
AUDIO_BYTES_PER_SECOND = 16_000


def model_family(model: object) -> str:
    """The provider family whose billing rules apply to ``model``: its ``provider``
    attribute (``"openai"``, ``"anthropic"``), or ``""`` when it has none."""
    provider = getattr(model, "provider", "")
    return provider if isinstance(provider, str) else ""


_KEPT = 4096
_estimates: dict[tuple[str, str, int, int, str], int] = {}
_lock = threading.Lock()


def media_tokens(part: MediaPart, family: str = "") -> int:
    """Estimated input tokens of ``part`` for a model of ``family`` (module docstring)."""
    key = (part.kind, part.mime_type, len(part.data), hash(part.data), family)
    known = _estimates.get(key)
    if known is not None:
        return known
    tokens = _estimate(part, family)
    with _lock:
        if len(_estimates) >= _KEPT:
            _estimates.clear()
        _estimates[key] = tokens
    return tokens


def _estimate(part: MediaPart, family: str) -> int:
    if part.kind == "audio":
        return math.ceil(audio_seconds(part) * AUDIO_TOKENS_PER_SECOND)
    size = image_size(part)
    if size is None:
        side = max(1, math.isqrt(max(part.size, 1)))
        size = (side, side)
    width, height = size
    if family == ANTHROPIC:
        return anthropic_image_tokens(width, height)
    if family == OPENAI:
        return openai_image_tokens(width, height)
    return max(anthropic_image_tokens(width, height), openai_image_tokens(width, height))


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's rule: scaled within 1568 px and 1.15 MP, then ``w * h / 750``."""
    width, height = max(width, 1), max(height, 1)
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    return max(1, math.ceil(w * h / 750))


def openai_image_tokens(width: int, height: int) -> int:
    """OpenAI's high-detail rule: within 2048 x 2048, short edge at most 768 px, then
    170 tokens a 512 px tile plus 85."""
    width, height = max(width, 1), max(height, 1)
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def image_size(part: MediaPart) -> tuple[int, int] | None:
    """Width and height from the image's header (Pillow, when installed); None when they
    cannot be read."""
    try:
        from PIL import Image
    except ImportError:
        return None
    for chars in (HEADER_CHARS, len(part.data)):
        head = _decoded(part.data, chars)
        if head is None:
            return None
        try:
            with Image.open(io.BytesIO(head)) as image:
                width, height = image.size
            return (int(width), int(height)) if width > 0 and height > 0 else None
        except Exception:  # not an image Pillow knows, a header cut short, a decompression bomb
            if chars >= len(part.data):
                return None
    return None


def audio_seconds(part: MediaPart) -> float:
    """A sound's length: from its WAV header, else from its size at 128 kbit/s."""
    if part.mime_type.lower() in ("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"):
        import wave

        head = _decoded(part.data, HEADER_CHARS)
        if head is not None:
            try:
                with wave.open(io.BytesIO(head)) as sound:
                    rate = sound.getframerate()
                    frame_bytes = sound.getsampwidth() * sound.getnchannels()
                if rate > 0 and frame_bytes > 0:
                    return part.size / (rate * frame_bytes)
            except (wave.Error, EOFError, ValueError):
                pass
    return part.size / AUDIO_BYTES_PER_SECOND


def _decoded(data: str, chars: int) -> bytes | None:
    """The bytes of the first ``chars`` base64 characters of ``data`` (whole quanta)."""
    text = data[:chars]
    text = text[: len(text) - len(text) % 4] if len(text) < len(data) else text
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None


__all__ = [
    "anthropic_image_tokens",
    "audio_seconds",
    "image_size",
    "media_tokens",
    "model_family",
    "openai_image_tokens",
]
