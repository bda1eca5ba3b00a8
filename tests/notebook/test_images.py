"""Images made ready for a model: kept as they are when small, downscaled or re-encoded
under the limit when not, recognised in the objects `@name` attaches, and sent only to a
model that reads images."""

from __future__ import annotations

import io
import os

import pytest
from PIL import Image
from pydantic_ai.models.test import TestModel
from pydantic_ai.profiles import ModelProfile

from co_kernel.notebook import MAX_BYTES, image_of_object, model_accepts_images, prepare_image


def _encoded(image: Image.Image, kind: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, kind)
    return buffer.getvalue()


def test_a_small_image_is_sent_as_it_is() -> None:
    data = _encoded(Image.new("RGB", (640, 480), "teal"))
    image = prepare_image(data, "figure")
    assert image is not None and image.data == data and image.note is None
    assert image.describe() == "PNG 640x480 figure"


def test_a_large_transparent_image_is_flattened_into_a_jpeg_under_the_limit() -> None:
    noise = Image.frombytes("RGBA", (2000, 1500), os.urandom(2000 * 1500 * 4))
    image = prepare_image(_encoded(noise), "image file noise.png")
    assert image is not None and len(image.data) <= MAX_BYTES
    assert image.media_type == "image/jpeg" and max(image.width, image.height) <= 1568
    assert image.note and image.note.startswith("downscaled from 2000x1500 PNG")
    assert Image.open(io.BytesIO(image.data)).mode == "RGB"


def test_a_tall_crisp_image_stays_a_png_at_the_longest_side_allowed() -> None:
    image = prepare_image(_encoded(Image.new("L", (400, 4000), 200)), "image")
    assert image is not None and image.media_type == "image/png"
    assert (image.width, image.height) == (157, 1568)


@pytest.mark.parametrize("data", [b"not an image", _encoded(Image.new("RGB", (8, 8)), "BMP")])
def test_what_is_no_image_a_model_reads_is_none(data: bytes) -> None:
    assert prepare_image(data, "file") is None


def test_figures_axes_and_image_objects_have_an_image_other_objects_none() -> None:
    from IPython.display import Image as IPythonImage
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=100)
    axes = figure.add_subplot()
    axes.plot([1, 2])
    png = _encoded(Image.new("RGB", (30, 20), "red"))
    for value in (figure, axes, Image.new("RGB", (30, 20)), IPythonImage(data=png), png):
        image = image_of_object(value, "@x")
        assert image is not None and image.media_type == "image/png", value
    for value in ({"figure": figure}, "text", 42, b"bytes but no image"):
        assert image_of_object(value, "@x") is None


def test_images_go_to_a_model_whose_profile_or_setting_says_it_reads_them() -> None:
    reads = TestModel()
    blind = TestModel(profile=ModelProfile(supports_image_input=False))
    assert model_accepts_images(reads, "auto") and not model_accepts_images(blind, "auto")
    assert model_accepts_images(blind, True) and not model_accepts_images(reads, False)
    assert not model_accepts_images(None, "auto")
