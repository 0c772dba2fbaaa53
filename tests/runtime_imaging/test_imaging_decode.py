"""decode_image: every colour mode, EXIF orientation, ICC, 16-bit, alpha, bombs (files built with Pillow)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageCms

from scoreaudit.runtime.images import ImageFailure, content_hash, decode_image


def rgb_pattern(h=6, w=8):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_rgb_png_round_trips(tmp_path):
    arr = rgb_pattern()
    Image.fromarray(arr).save(tmp_path / "a.png")
    out = decode_image(tmp_path / "a.png")
    assert out.dtype == np.uint8 and out.shape == (6, 8, 3) and np.array_equal(out, arr)


def test_palette_with_and_without_transparency(tmp_path):
    pal = Image.new("P", (4, 2))
    pal.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 759)
    pal.putdata([0, 1, 2, 0, 1, 2, 0, 1])
    pal.save(tmp_path / "p.png")
    out = decode_image(tmp_path / "p.png")
    assert out[0].tolist() == [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 0]]
    pal.save(tmp_path / "pt.png", transparency=1)  # green is transparent → white
    out = decode_image(tmp_path / "pt.png")
    assert out[0].tolist() == [[255, 0, 0], [255, 255, 255], [0, 0, 255], [255, 0, 0]]


def test_greyscale_modes(tmp_path):
    grey = np.arange(0, 240, 10, dtype=np.uint8).reshape(4, 6)
    Image.fromarray(grey, "L").save(tmp_path / "l.png")
    assert np.array_equal(decode_image(tmp_path / "l.png"), np.repeat(grey[..., None], 3, 2))
    la = Image.merge("LA", [Image.fromarray(grey), Image.fromarray(np.full_like(grey, 0))])
    la.save(tmp_path / "la.png")  # fully transparent → white
    assert np.all(decode_image(tmp_path / "la.png") == 255)
    g16 = np.array([[0, 257, 65535, 1000]], dtype=np.uint16)
    Image.fromarray(g16).save(tmp_path / "g16.png")
    assert Image.open(tmp_path / "g16.png").mode.startswith("I")
    assert decode_image(tmp_path / "g16.png")[0, :, 0].tolist() == [0, 1, 255, 4]  # round(v / 257)
    Image.fromarray(np.array([[0, 1]], bool)).save(tmp_path / "bw.png")
    assert decode_image(tmp_path / "bw.png")[0].tolist() == [[0, 0, 0], [255, 255, 255]]


def test_rgba_is_composited_on_white(tmp_path):
    rgba = np.array([[[200, 100, 50, 255], [200, 100, 50, 128], [200, 100, 50, 0]]], np.uint8)
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    out = decode_image(tmp_path / "a.png")
    half = [round(c * 128 / 255 + 255 * 127 / 255) for c in (200, 100, 50)]
    assert out[0].tolist() == [[200, 100, 50], half, [255, 255, 255]]


def test_cmyk_matches_pillows_conversion(tmp_path):
    cmyk = Image.fromarray(rgb_pattern()).convert("CMYK")
    cmyk.save(tmp_path / "c.tif")
    assert Image.open(tmp_path / "c.tif").mode == "CMYK"
    assert np.array_equal(decode_image(tmp_path / "c.tif"), np.asarray(cmyk.convert("RGB")))


def test_16bit_colour_png_is_rounded_not_truncated(tmp_path):
    import cv2

    rgb16 = np.array([[[0, 1000, 65535], [257 * 7 + 200, 128, 40000]]], np.uint16)
    cv2.imwrite(str(tmp_path / "c16.png"), rgb16[..., ::-1])
    out = decode_image(tmp_path / "c16.png")
    assert out.tolist() == np.rint(rgb16 / 257.0).astype(int).tolist()
    rgba16 = np.concatenate([rgb16, np.full((1, 2, 1), 0, np.uint16)], axis=2)
    cv2.imwrite(str(tmp_path / "c16a.png"), rgba16[..., [2, 1, 0, 3]])
    assert np.all(decode_image(tmp_path / "c16a.png") == 255)


@pytest.mark.parametrize("orientation,expected", [
    (3, lambda a: a[::-1, ::-1]),         # rotated 180°
    (6, lambda a: np.rot90(a, k=-1)),     # display = stored rotated 90° clockwise
    (8, lambda a: np.rot90(a, k=1)),      # display = stored rotated 90° counter-clockwise
    (2, lambda a: a[:, ::-1]),            # mirrored
])
def test_exif_orientation_is_applied(tmp_path, orientation, expected):
    arr = rgb_pattern(4, 6)
    exif = Image.Exif()
    exif[0x0112] = orientation
    Image.fromarray(arr).save(tmp_path / "o.png", exif=exif)
    out = decode_image(tmp_path / "o.png")
    assert np.array_equal(out, expected(arr))


def test_icc_profiles_are_converted_or_tolerated(tmp_path):
    arr = rgb_pattern()
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    Image.fromarray(arr).save(tmp_path / "icc.png", icc_profile=srgb)
    assert np.abs(decode_image(tmp_path / "icc.png").astype(int) - arr).max() <= 2
    Image.fromarray(arr).save(tmp_path / "bad.png", icc_profile=b"not a profile")
    assert np.array_equal(decode_image(tmp_path / "bad.png"), arr)
    lab_profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()  # not an RGB space
    Image.fromarray(arr).save(tmp_path / "odd.png", icc_profile=lab_profile)
    assert decode_image(tmp_path / "odd.png").shape == arr.shape


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width×height (Pillow reads only the header on open)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def test_decompression_bombs_are_refused_with_a_reason(tmp_path):
    (tmp_path / "big.png").write_bytes(png_header_only(12_000, 10_000))
    with pytest.raises(ImageFailure) as err:
        decode_image(tmp_path / "big.png")
    assert err.value.stage == "decode"
    assert err.value.reason == ("image is 12000×10000 = 120,000,000 pixels, more than max_pixels "
                                "(89,478,485); refused as a possible decompression bomb (raise "
                                "max_pixels on the arm if you trust this file)")
    (tmp_path / "huge.png").write_bytes(png_header_only(20_000, 20_000))  # Pillow's own guard fires
    with pytest.raises(ImageFailure) as err:
        decode_image(tmp_path / "huge.png")
    assert err.value.reason.startswith("refused as a possible decompression bomb: Image size (400000000 pixels)")
    Image.fromarray(rgb_pattern(20, 20)).save(tmp_path / "small.png")
    with pytest.raises(ImageFailure, match=r"20×20 = 400 pixels, more than max_pixels \(399\)"):
        decode_image(tmp_path / "small.png", max_pixels=399)


def test_unreadable_and_truncated_files(tmp_path):
    (tmp_path / "text.png").write_text("hello")
    with pytest.raises(ImageFailure) as err:
        decode_image(tmp_path / "text.png")
    assert err.value.reason == "not a readable image file (unknown or corrupt format)"
    buf = io.BytesIO()
    Image.fromarray(rgb_pattern(64, 64)).save(buf, format="JPEG")
    (tmp_path / "cut.jpg").write_bytes(buf.getvalue()[:300])
    with pytest.raises(ImageFailure) as err:
        decode_image(tmp_path / "cut.jpg")
    assert err.value.reason.startswith("image data is corrupt or truncated (")
    with pytest.raises(ImageFailure) as err:
        decode_image(tmp_path / "missing.png")
    assert err.value.reason == "image file not found"


def test_content_hash_depends_on_pixels_and_shape():
    a = np.zeros((2, 3, 3), np.uint8)
    b = a.copy()
    b[0, 0, 0] = 1
    assert content_hash(a) == content_hash(a.copy())
    assert content_hash(a) != content_hash(b)
    assert content_hash(a) != content_hash(np.zeros((3, 2, 3), np.uint8))
    import hashlib
    assert content_hash(a) == hashlib.sha256(b"|u1|(2, 3, 3)|" + a.tobytes()).hexdigest()
