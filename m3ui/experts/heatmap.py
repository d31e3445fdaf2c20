"""The layer x expert activation heatmap as a small palette PNG, GPU-resident experts marked.

A data-URL PNG in an HTML element is the cheapest live heatmap in Gradio (GRADIO_NOTES.md: ~10 kB and 5 ms
per refresh, against 120 kB for plotly and a new cache file per refresh for gr.Image). Rows are layers,
columns experts; each cell is `cell_px` square: its inside shows log(1 + activations) on a dark-to-bright
ramp relative to the busiest expert, and its bottom edge is cyan when the expert is on the GPU.
"""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

_RAMP_ANCHORS = np.array(  # dark violet -> red -> orange -> pale yellow, readable on a dark page
    [(40, 11, 84), (101, 21, 110), (159, 42, 99), (212, 72, 66), (245, 125, 21), (250, 193, 39), (252, 255, 164)],
    dtype=np.float64,
)
RAMP_LEVELS = 64
COMPRESS_LEVEL = 2  # ~1 ms and 7-13 kB for M3; level 9 saves 15% for 10x the time
_IDLE, _GPU_EDGE, _CPU_EDGE = RAMP_LEVELS + 1, RAMP_LEVELS + 2, RAMP_LEVELS + 3  # palette indices after the ramp
_IDLE_RGB, _GPU_EDGE_RGB, _CPU_EDGE_RGB = (24, 26, 32), (0, 200, 230), (8, 9, 12)


def _palette() -> list[int]:
    positions = np.linspace(0, len(_RAMP_ANCHORS) - 1, RAMP_LEVELS)
    ramp = np.stack([np.interp(positions, np.arange(len(_RAMP_ANCHORS)), _RAMP_ANCHORS[:, c]) for c in range(3)], 1)
    colors = [(0, 0, 0), *map(tuple, ramp.round().astype(int)), _IDLE_RGB, _GPU_EDGE_RGB, _CPU_EDGE_RGB]
    return [int(v) for color in colors for v in color]


_PALETTE = _palette()


def _levels(counts: np.ndarray) -> np.ndarray:
    """uint8 palette index per cell: 1..RAMP_LEVELS by log(count) between the least and the most active
    expert (routing is skewed over orders of magnitude), _IDLE for zero."""
    active = counts > 0
    if not active.any():
        return np.full(counts.shape, _IDLE, dtype=np.uint8)
    logs = np.log(np.where(active, counts, 1).astype(np.float64))
    low, high = logs[active].min(), logs[active].max()
    scaled = (logs - low) / (high - low) if high > low else np.ones(counts.shape)
    levels = 1 + np.minimum((scaled * RAMP_LEVELS).astype(np.int64), RAMP_LEVELS - 1)
    return np.where(active, levels, _IDLE).astype(np.uint8)


def render_heatmap(counts: np.ndarray, residency: np.ndarray | None, cell_px: int = 4) -> bytes:
    """PNG bytes of `counts` [layers, experts]; `residency` (bool, same shape) marks GPU experts."""
    if counts.ndim != 2 or (residency is not None and residency.shape != counts.shape):
        raise ValueError(f"counts {counts.shape} and residency {None if residency is None else residency.shape}")
    if cell_px < 2:
        raise ValueError("cell_px must be at least 2 (one pixel of heat and one of edge)")
    marks = np.full(counts.shape, _CPU_EDGE, dtype=np.uint8)
    if residency is not None:
        marks[residency] = _GPU_EDGE
    block = np.ones((cell_px, cell_px), dtype=np.uint8)
    pixels = np.kron(_levels(counts), block)
    # the bottom pixel row of a cell marks residency; the right pixel column separates experts
    bottom = np.tile(np.arange(cell_px) == cell_px - 1, counts.shape[0])
    pixels[bottom, :] = np.repeat(marks, cell_px, axis=1)
    pixels[:, np.tile(np.arange(cell_px) == cell_px - 1, counts.shape[1])] = _CPU_EDGE
    image = Image.fromarray(pixels, mode="P")
    image.putpalette(_PALETTE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=COMPRESS_LEVEL)
    return buffer.getvalue()


def ramp_css_gradient() -> str:
    """The heatmap's colour ramp as a CSS `linear-gradient` (for a legend drawn in HTML)."""
    stops = ", ".join(f"rgb({r:.0f},{g:.0f},{b:.0f})" for r, g, b in _RAMP_ANCHORS)
    return f"linear-gradient(to right, {stops})"


def gpu_edge_css() -> str:
    """The colour that marks GPU-resident experts, as CSS."""
    return "rgb({},{},{})".format(*_GPU_EDGE_RGB)


def png_data_url(png: bytes) -> str:
    """`data:image/png;base64,...` for an <img src> (no file, no cache entry)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
