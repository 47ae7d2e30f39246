"""keras.visualization on NumPy arrays (keras/src/visualization/): boxes and
segmentation masks drawn into image arrays, and galleries of images plotted
with matplotlib (imported on first use). Keras draws boxes with OpenCV; here
they are drawn with NumPy (the pixels within line_thickness / 2 of the
outline, an approximation of OpenCV's thick lines) and labels rasterized
with matplotlib's DejaVu Sans instead of OpenCV's Hershey font, so label
glyphs differ in their pixels from Keras-with-OpenCV."""

import functools
import math

import numpy as np

from .backend import image_data_format
from .bounding_boxes import _arrays_only, convert_format


def _batched(images):
    shape = np.shape(images)
    if len(shape) != 4:
        raise ValueError(f"`images` must be batched 4D tensor. Received: images.shape={tuple(shape)}")


def _rectangle(img, x1, y1, x2, y2, color, thickness):
    """img (H, W, C) uint8, in place: the outline of the box with corners (x1, y1), (x2, y2) (inclusive), pixels
    within thickness / 2 of it; a negative thickness fills the box (OpenCV's FILLED)"""
    h, w = img.shape[:2]
    xa, xb, ya, yb = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
    ys, xs = np.arange(h)[:, None], np.arange(w)[None, :]
    if thickness < 0:
        on = (xs >= xa) & (xs <= xb) & (ys >= ya) & (ys <= yb)
    else:
        r = max(thickness, 1) / 2.0
        dx = np.maximum(np.maximum(xa - xs, xs - xb), 0)   # distance to the box's column span
        dy = np.maximum(np.maximum(ya - ys, ys - yb), 0)
        near_v = np.minimum(abs(xs - xa), abs(xs - xb))      # to the nearest vertical edge's line
        near_h = np.minimum(abs(ys - ya), abs(ys - yb))
        d_vert = np.sqrt(near_v ** 2 + dy ** 2)               # to the vertical edges (segments)
        d_horz = np.sqrt(near_h ** 2 + dx ** 2)
        on = np.minimum(d_vert, d_horz) <= r
    img[on] = color


def _text_mask(text, font_scale, thickness):
    """(h, w) bool, the text's pixels, and its descent below the baseline; the font's cap height about OpenCV's
    Hershey simplex at this scale (22 px at 1.0); each thickness step past 1 dilates the strokes a pixel"""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font
    font = FT2Font(font_manager.findfont("DejaVu Sans"))
    font.set_size(30.0 * font_scale, 72)
    font.set_text(text, 0.0)
    font.draw_glyphs_to_bitmap()
    mask = np.asarray(font.get_image()) >= 128
    for _ in range(max(int(thickness), 1) - 1):
        grown = mask.copy()
        grown[1:] |= mask[:-1]
        grown[:-1] |= mask[1:]
        grown[:, 1:] |= mask[:, :-1]
        grown[:, :-1] |= mask[:, 1:]
        mask = grown
    return mask, int(round(font.get_descent() / 64.0))


def _put_text(img, text, x, y, color, font_scale, thickness):
    """img (H, W, C) in place: text with its baseline's left end at (x, y), clipped to the image"""
    mask, descent = _text_mask(text, font_scale, thickness)
    top = y - (mask.shape[0] - descent)
    h, w = img.shape[:2]
    r0, c0 = max(top, 0), max(x, 0)
    r1, c1 = min(top + mask.shape[0], h), min(x + mask.shape[1], w)
    if r1 > r0 and c1 > c0:
        img[r0:r1, c0:c1][mask[r0 - top:r1 - top, c0 - x:c1 - x]] = color


def _find_text_location(x, y, font_scale, thickness):
    font_height = int(font_scale * 12)
    if y - 8 - (2 * font_height) > 0:
        return x, y - 8
    return x + 3, y + (2 * font_height) + thickness + 3


@_arrays_only
def draw_bounding_boxes(images, bounding_boxes, bounding_box_format, class_mapping=None, color=(128, 128, 128),
                        line_thickness=2, text_thickness=1, font_scale=1.0, data_format=None):
    """Keras's draw_bounding_boxes: images (batch, H, W, C) as uint8 (floats of at most 1 scaled by 255, others
    clipped to [0, 255]) with each box of bounding_boxes {"boxes" (batch, N, 4), "labels" (batch, N), optional
    "confidences"} outlined in color, its label (class_mapping[label], '| conf') written above it; label -1 skipped.
    Returns a new array in the layout of `images`."""
    class_mapping = class_mapping or {}
    text_thickness = text_thickness or line_thickness
    data_format = data_format or image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"`data_format` must be 'channels_last' or 'channels_first', got {data_format!r}")
    _batched(images)
    if not isinstance(bounding_boxes, dict):
        raise TypeError(f"`bounding_boxes` should be a dict. Received: bounding_boxes of type "
                        f"{type(bounding_boxes).__name__}")
    if "boxes" not in bounding_boxes or "labels" not in bounding_boxes:
        raise ValueError(f"`bounding_boxes` should be a dict containing 'boxes' and 'labels' keys. Received keys: "
                         f"{sorted(bounding_boxes)}")
    if not isinstance(line_thickness, (int, np.integer)) or line_thickness == 0:
        raise ValueError(f"`line_thickness` must be a non-zero int (negative: filled), got {line_thickness!r}")
    images = np.asarray(images)
    if data_format == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    height, width = images.shape[1:3]
    bounding_boxes = convert_format(dict(bounding_boxes), bounding_box_format, "xyxy", height, width)
    if images.dtype.kind == "f" and images.size > 0:
        images = np.clip(images, 0, 1) * 255 if images.max() <= 1.0 else np.clip(images, 0, 255)
    images = images.astype("uint8")   # a copy: the caller's images stay as they were
    channels = images.shape[-1]
    paint = np.array((list(color) + [0] * channels)[:channels], dtype="uint8") if channels > 1 else np.uint8(color[0])
    boxes = np.asarray(bounding_boxes["boxes"])
    labels = np.asarray(bounding_boxes["labels"])
    confidences = np.asarray(bounding_boxes["confidences"]) if "confidences" in bounding_boxes else None
    for i in range(images.shape[0]):
        for j in range(boxes[i].shape[0]):
            x1, y1, x2, y2 = (int(v) for v in boxes[i][j].astype("int32"))
            c = int(labels[i][j])
            if c == -1:
                continue
            _rectangle(images[i], x1, y1, x2, y2, paint, line_thickness)
            if c in class_mapping:
                label = class_mapping[c]
                if confidences is not None:
                    label = f"{label} | {confidences[i][j]:.2f}"
                fx, fy = _find_text_location(x1, y1, font_scale, text_thickness)
                _put_text(images[i], label, fx, fy, paint, font_scale, text_thickness)
    return images.transpose(0, 3, 1, 2) if data_format == "channels_first" else images


def _generate_color_palette(num_classes):
    palette = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1])
    return [((i * palette) % 255).tolist() for i in range(num_classes)]


@_arrays_only
def draw_segmentation_masks(images, segmentation_masks, num_classes=None, color_mapping=None, alpha=0.8, blend=True,
                            ignore_index=-1, data_format=None):
    """Keras's draw_segmentation_masks: each pixel of class k (0 <= k < num_classes) painted color k (the default
    palette, or color_mapping[k]), blended over the image with alpha (pixels of ignore_index keep the image's);
    images (batch, H, W, C), masks (batch, H, W, 1) or (batch, H, W) of ints. Returns channels-last, uint8 when
    blending, else float32, as Keras."""
    data_format = data_format or image_data_format()
    _batched(images)
    masks = np.asarray(segmentation_masks)
    if masks.dtype.kind not in "iu":
        raise TypeError(f"`segmentation_masks` must be in integer dtype. Received: segmentation_masks.dtype="
                        f"{masks.dtype}")
    images = np.asarray(images)
    if data_format == "channels_first":
        images = images.transpose(0, 2, 3, 1)
        masks = masks.transpose(0, 2, 3, 1)
    if masks.ndim == 3:
        masks = masks[..., None]
    if masks.ndim != 4 or masks.shape[:3] != images.shape[:3] or masks.shape[-1] != 1:
        raise ValueError(f"`segmentation_masks` must be (batch, H, W, 1) or (batch, H, W) matching images "
                         f"{images.shape}, got shape {np.shape(segmentation_masks)}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"`alpha` must be in [0, 1], got {alpha!r}")
    images = images.astype("float32")
    if num_classes is None:
        num_classes = int(masks.max())
    if color_mapping is None:
        colors = _generate_color_palette(num_classes)
    else:
        missing = [i for i in range(num_classes) if i not in color_mapping]
        if missing:
            raise ValueError(f"`color_mapping` has no color for classes {missing} (it needs 0 .. num_classes - 1 "
                             f"= {num_classes - 1})")
        colors = [color_mapping[i] for i in range(num_classes)]
    valid = masks[..., 0] != ignore_index
    drawn = images.copy()
    for k, color in enumerate(colors):
        drawn[masks[..., 0] == k, ...] = np.array(color, dtype="float32")[None, :]
    if not blend:
        return drawn
    out = images * np.float32(1 - alpha) + drawn * np.float32(alpha)
    return np.where(valid[..., None], out, images).astype("uint8")


def _transform_value_range(images, value_range):
    """images from value_range to (0, 255), as Keras's preprocessing layers' _transform_value_range"""
    if value_range[0] == 0 and value_range[1] == 255:
        return images
    lo, hi = np.float32(value_range[0]), np.float32(value_range[1])
    return (np.asarray(images, "float32") - lo) / (hi - lo) * np.float32(255) + np.float32(0)


@_arrays_only
def plot_image_gallery(images, y_true=None, y_pred=None, label_map=None, rows=None, cols=None, value_range=(0, 255),
                       scale=2, path=None, show=None, transparent=True, dpi=60, legend_handles=None, data_format=None):
    """Keras's plot_image_gallery: a rows x cols grid of the images (batch, H, W, C) (default: ceil(sqrt(batch))
    rows, batch // rows columns), titled with label_map[y_true] / label_map[y_pred] when given; saved to path, or
    shown (plt.show()) when show or no path. Returns the matplotlib Figure (Keras returns None)."""
    import matplotlib.pyplot as plt
    if path is not None and show:
        raise ValueError("plot_gallery() expects either `path` to be set, or `show` to be true.")
    if (y_true is not None or y_pred is not None) and label_map is None:
        raise ValueError("If `y_true` or `y_pred` are provided, a `label_map` must also be provided.")
    _batched(images)
    show = show if show is not None else (path is None)
    data_format = data_format or image_data_format()
    images = np.asarray(images)
    batch_size = images.shape[0]
    rows = rows or int(math.ceil(math.sqrt(batch_size)))
    cols = cols or int(math.ceil(batch_size // rows))
    images = images[:min(rows * cols, batch_size)]
    if data_format == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    fig, axes = plt.subplots(nrows=rows, ncols=cols, figsize=(cols * scale, rows * scale), frameon=False,
                             layout="tight", squeeze=True, sharex="row", sharey="col")
    fig.subplots_adjust(wspace=0, hspace=0)
    if isinstance(axes, np.ndarray) and axes.ndim == 1:
        axes = np.expand_dims(axes, 0 if rows == 1 else -1)
    if legend_handles is not None:
        fig.legend(handles=legend_handles, loc="lower center")
    images = _transform_value_range(images, value_range)
    y_true = None if y_true is None else np.asarray(y_true)
    y_pred = None if y_pred is None else np.asarray(y_pred)
    for row in range(rows):
        for col in range(cols):
            index = row * cols + col
            ax = axes[row, col] if isinstance(axes, np.ndarray) else axes
            ax.margins(x=0, y=0)
            ax.axis("off")
            if index >= len(images):   # Keras raises IndexError here; an empty cell
                continue
            ax.imshow(images[index].astype("uint8"))
            title = []
            if y_true is not None and index < len(y_true):
                title.append(f"Label: {label_map.get(y_true[index], 'Unknown')}")
            if y_pred is not None and index < len(y_pred):
                title.append(f"Pred: {label_map.get(y_pred[index], 'Unknown')}")
            if title:
                ax.set_title("  ".join(title), fontsize=8)
    if path is not None:
        fig.savefig(fname=path, pad_inches=0, bbox_inches="tight", transparent=transparent, dpi=dpi)
        plt.close(fig)
    elif show:
        plt.show()
        plt.close(fig)
    return fig


@_arrays_only
def plot_bounding_box_gallery(images, bounding_box_format, y_true=None, y_pred=None, value_range=(0, 255),
                              true_color=(0, 188, 212), pred_color=(255, 235, 59), line_thickness=2, font_scale=1.0,
                              text_thickness=None, class_mapping=None, ground_truth_mapping=None,
                              prediction_mapping=None, legend=False, legend_handles=None, rows=None, cols=None,
                              data_format=None, **kwargs):
    """Keras's plot_bounding_box_gallery: y_true's boxes (true_color) and y_pred's (pred_color) drawn by
    draw_bounding_boxes, then plot_image_gallery (kwargs go to it); legend: a patch per colour. Returns the
    Figure."""
    from matplotlib import patches
    prediction_mapping = prediction_mapping or class_mapping
    ground_truth_mapping = ground_truth_mapping or class_mapping
    data_format = data_format or image_data_format()
    _batched(images)
    images = np.asarray(images)
    if data_format == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    draw = functools.partial(draw_bounding_boxes, bounding_box_format=bounding_box_format,
                             line_thickness=line_thickness, text_thickness=text_thickness, font_scale=font_scale,
                             data_format="channels_last")
    if y_true is not None:
        images = draw(images, y_true, color=true_color, class_mapping=ground_truth_mapping)
    if y_pred is not None:
        images = draw(images, y_pred, color=pred_color, class_mapping=prediction_mapping)
    if legend:
        if legend_handles:
            raise ValueError("Only pass `legend` OR `legend_handles` to "
                             "`keras.visualization.plot_bounding_box_gallery()`.")
        legend_handles = [patches.Patch(color=np.array(true_color) / 255.0, label="Ground Truth"),
                          patches.Patch(color=np.array(pred_color) / 255.0, label="Prediction")]
    return plot_image_gallery(images, value_range=value_range, legend_handles=legend_handles, rows=rows, cols=cols,
                              data_format="channels_last", **kwargs)


@_arrays_only
def plot_segmentation_mask_gallery(images, num_classes, value_range=(0, 255), y_true=None, y_pred=None,
                                   color_mapping=None, blend=True, alpha=0.8, ignore_index=-1, data_format=None,
                                   **kwargs):
    """Keras's plot_segmentation_mask_gallery: a row per image: the image, then y_true's and y_pred's masks drawn
    over it (draw_segmentation_masks); kwargs go to plot_image_gallery. Returns the Figure."""
    data_format = data_format or image_data_format()
    _batched(images)
    images = np.asarray(images)
    if data_format == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    draw = functools.partial(draw_segmentation_masks, num_classes=num_classes, color_mapping=color_mapping,
                             alpha=alpha, ignore_index=ignore_index, blend=blend, data_format="channels_last")
    drawn = []
    for masks in (y_true, y_pred):
        if masks is not None:
            masks = np.asarray(masks)
            if data_format == "channels_first":
                masks = masks.transpose(0, 2, 3, 1)
            drawn.append(draw(images, masks.astype("int32")))
    gallery = np.stack([im for i in range(images.shape[0]) for im in [images[i]] + [d[i] for d in drawn]], axis=0)
    return plot_image_gallery(gallery, value_range=value_range, rows=images.shape[0], cols=1 + len(drawn),
                              data_format="channels_last", **kwargs)
