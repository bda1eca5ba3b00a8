"""Images for the model: figures and image outputs of the notebook's Python, image objects
named with ``@name``, image files read with ``read_file``.

Each becomes a ``ModelImage``: PNG, JPEG, GIF or WebP bytes no larger than ``MAX_BYTES``
and no side longer than ``MAX_SIDE`` pixels (a larger one is downscaled, and re-encoded as
JPEG when that is what fits, with a note that says so). A model that accepts images gets it
as pydantic-ai ``BinaryContent``; one that does not gets ``describe()``: "PNG 640x480
figure". Which models accept images: the ``model_accepts_images`` setting, or with ``auto``
what pydantic-ai's profile of the model says (``supports_image_input``).

Pillow decodes and re-encodes; it is imported on first use.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IMAGE_TYPES",
    "MAX_BYTES",
    "MAX_SIDE",
    "ModelImage",
    "image_of_object",
    "images_of_outputs",
    "model_accepts_images",
    "prepare_image",
]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types sent to models (those OpenAI, Anthropic and Gemini all read)."""

MAX_BYTES = 150_000
"""The most bytes one image may have: 200 KB once base64-encoded into a request."""

MAX_SIDE = 1568
"""The longest side sent, in pixels; providers scale larger images down themselves
(Anthropic to 1568, OpenAI to 2048), so more pixels only cost bytes."""

_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
_MIN_SIDE = 64


@dataclass
class ModelImage:
    """One image ready to be sent to a model, or described to one that reads no images."""

    data: bytes
    """The encoded image, at most ``MAX_BYTES``."""
    media_type: str
    """One of ``IMAGE_TYPES``."""
    width: int
    """Pixels, as sent."""
    height: int
    """Pixels, as sent."""
    label: str
    """What it is: "figure", "image", "image file plot.png", "@fig"."""
    note: str | None = None
    """How it was changed to fit (downscaled, re-encoded, first frame), if it was."""

    def describe(self) -> str:
        """One line: "PNG 640x480 figure", and the note when it was downscaled."""
        kind = self.media_type.removeprefix("image/").upper()
        line = f"{kind} {self.width}x{self.height} {self.label}"
        return f"{line} ({self.note})" if self.note else line

    def binary(self) -> Any:
        """pydantic-ai's ``BinaryContent`` of the image, as a tool result or prompt carries it."""
        from pydantic_ai.messages import BinaryContent

        return BinaryContent(data=self.data, media_type=self.media_type)


def model_accepts_images(model: Any, setting: bool | str) -> bool:
    """Whether images are sent to ``model``: the ``model_accepts_images`` setting when it is
    true or false, else (``auto``) what pydantic-ai's profile of the model says."""
    if isinstance(setting, bool):
        return setting
    try:
        return bool(model.profile.get("supports_image_input", True))
    except Exception:  # no model, or one without a profile: describe rather than fail
        return False


def _kb(size: int) -> str:
    return f"{size / 1000:.0f} KB" if size >= 1000 else f"{size} bytes"


def prepare_image(data: bytes, label: str) -> ModelImage | None:
    """The image in ``data`` as a model may receive it, downscaled if needed; None when the
    bytes are not a PNG, JPEG, GIF or WebP image that can be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            media_type = _FORMATS.get(img.format or "")
            if media_type is None:
                return None
            width, height = img.size
            frames = getattr(img, "n_frames", 1)
            if len(data) <= MAX_BYTES and max(width, height) <= MAX_SIDE and frames == 1:
                return ModelImage(data, media_type, width, height, label)
            img.seek(0)
            first = img.convert("RGBA" if _has_alpha(img) else "RGB")
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    shrunk, kind, out = _shrink(first)
    was = f"{width}x{height} {media_type.removeprefix('image/').upper()} ({_kb(len(data))})"
    now = f"{shrunk.width}x{shrunk.height} {kind} ({_kb(len(out))})"
    verb = "downscaled" if shrunk.size != (width, height) else "re-encoded"
    first = "first frame of an animation, " if frames > 1 else ""
    note = f"{first}{verb} from {was} to {now} to fit the {_kb(MAX_BYTES)} image limit"
    return ModelImage(out, _FORMATS[kind], shrunk.width, shrunk.height, label, note)


def _has_alpha(img: Any) -> bool:
    return img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info


def _shrink(img: Any) -> tuple[Any, str, bytes]:
    """Smaller until it fits: PNG at the longest side allowed (figures stay crisp), else
    JPEG at falling sizes (a photo, or noise, compresses only that way)."""
    from PIL import Image

    scale = min(1.0, MAX_SIDE / max(img.size))

    def resized(source: Any) -> Any:
        size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
        return source.resize(size, Image.Resampling.LANCZOS) if size != source.size else source

    first = resized(img)
    png = _encode(first, "PNG")
    if len(png) <= MAX_BYTES:
        return first, "PNG", png
    flat = img
    if img.mode == "RGBA":  # JPEG has no alpha: flattened on white, as a page shows it
        flat = Image.new("RGB", img.size, "white")
        flat.paste(img, mask=img.getchannel("A"))
    while True:
        smaller = resized(flat)
        jpeg = _encode(smaller, "JPEG")
        if len(jpeg) <= MAX_BYTES or min(smaller.size) <= _MIN_SIDE:
            return smaller, "JPEG", jpeg
        scale *= 0.75


def _encode(img: Any, kind: str) -> bytes:
    buffer = io.BytesIO()
    if kind == "PNG":
        img.save(buffer, "PNG", optimize=True)
    else:
        img.save(buffer, "JPEG", quality=85, optimize=True)
    return buffer.getvalue()


def images_of_outputs(outputs: list[dict[str, Any]]) -> list[ModelImage]:
    """The image of each displayed output that has one (matplotlib figures, images)."""
    images = []
    for output in outputs:
        data = output.get("data") or {}
        plain = str(data.get("text/plain", ""))
        label = "figure" if plain.startswith("<Figure") else "image"
        for media_type in IMAGE_TYPES:
            encoded = data.get(media_type)
            if not isinstance(encoded, str):
                continue
            try:
                raw = base64.b64decode(encoded, validate=False)
            except (binascii.Error, ValueError):
                continue
            image = prepare_image(raw, label)
            if image is not None:
                images.append(image)
                break
    return images


def image_of_object(value: Any, label: str) -> ModelImage | None:
    """The image an object shows: a matplotlib figure (or axes), a Pillow image, IPython's
    ``Image``, anything with ``_repr_png_``/``_repr_jpeg_``, or image bytes; else None."""
    raw = _object_bytes(value)
    return prepare_image(raw, label) if raw else None


def _is_matplotlib(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "matplotlib"


def _object_bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    # A matplotlib Figure, or an Axes (or any artist) of one; only matplotlib's own objects,
    # so no other object's ``figure`` attribute is read.
    figure = value if _is_matplotlib(value) and hasattr(value, "savefig") else None
    if figure is None and _is_matplotlib(value):
        figure = getattr(value, "figure", None)
    if figure is not None and callable(getattr(figure, "savefig", None)):
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png", bbox_inches="tight")
        except Exception:
            return None
        return buffer.getvalue()
    for method in ("_repr_png_", "_repr_jpeg_"):
        render = getattr(value, method, None)
        if not callable(render):
            continue
        try:
            shown = render()
        except Exception:
            continue
        if isinstance(shown, tuple):  # (data, metadata)
            shown = shown[0] if shown else None
        if isinstance(shown, str):
            try:
                shown = base64.b64decode(shown)
            except (binascii.Error, ValueError):
                continue
        if isinstance(shown, bytes):
            return shown
    return None
