"""The value range of every stored weight of a `.keras` file, for `semfuzz check`'s
numeric-hazard analysis. Reads `model.weights.h5` from the archive with h5py and nothing
else: neither TensorFlow nor Keras is imported, and nothing in the file is executed.

Usage: python -I semfuzz_weight_ranges.py MODEL.keras MAX_RATIO RATIO_FLOOR MAX_ELEMENTS

The weights member is refused where it inflates more than MAX_RATIO times its stored size
(once past RATIO_FLOOR bytes), and any dataset that declares more than MAX_ELEMENTS elements;
the member is read as a stream and each dataset in slices, so memory stays bounded.

Prints one JSON object: {"layers": [{"path": [names...], "weights": [{"shape", "min",
"max", "nan"}, ...]}, ...]}, or {"layers": []} when the archive holds no weights file.

Keras 3 writes a model's weights as `layers/<key>/vars/<i>`, a nested model's under
`layers/<key>/layers/<key>/vars/<i>`, where <key> comes from the class name (`dense`,
`dense_1`) and the `vars` group's `name` attribute is the layer's name; <i> numbers the
layer's own variables, trainable first (its `get_weights()` order).
"""

import json
import math
import sys
import zipfile

import h5py
import numpy as np

WEIGHTS = "model.weights.h5"

# Values read at a time from one dataset.
SLICE_ELEMENTS = 1 << 22


class Refused(Exception):
    """A member or a dataset past the limits."""


def number(x):
    """A finite float, or the strings JSON needs for the others."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def hard(group, key):
    """The member `key` of `group` when it lives in this file: soft and external links are
    not followed."""
    return group[key] if isinstance(group.get(key, getlink=True), h5py.HardLink) else None


def local_dataset(member):
    """A dataset whose data lies in this file (not virtual, not in external raw files)."""
    return (
        isinstance(member, h5py.Dataset) and not member.is_virtual and not member.external
    )


def slices(dataset):
    """The dataset's values in pieces of at most about SLICE_ELEMENTS, as float64."""
    if dataset.ndim == 0:
        yield np.asarray(dataset[()])
        return
    row = max(1, dataset.size // max(1, dataset.shape[0]))
    step = max(1, SLICE_ELEMENTS // row)
    for start in range(0, dataset.shape[0], step):
        yield np.asarray(dataset[start : start + step])


def summary(dataset, max_elements):
    if dataset.size > max_elements:
        raise Refused(
            f"dataset {dataset.name} declares {dataset.size} elements, "
            f"past the limit of {max_elements}"
        )
    bf16 = dataset.attrs.get("dtype") == "bfloat16"
    lo, hi, nan = math.inf, -math.inf, False
    for values in slices(dataset):
        if bf16:
            # Stored as raw 16-bit patterns: the high half of a float32.
            values = (values.astype(np.uint32) << 16).view(np.float32)
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            continue
        isnan = np.isnan(values)
        nan = nan or bool(isnan.any())
        if not isnan.all():
            lo = min(lo, float(np.nanmin(values)))
            hi = max(hi, float(np.nanmax(values)))
    out = {"shape": list(dataset.shape), "min": None, "max": None, "nan": nan}
    if lo <= hi:
        out["min"] = number(lo)
        out["max"] = number(hi)
    return out


def name_of(group):
    name = group.attrs.get("name")
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if isinstance(name, str) else None


def walk(model_group, path, out, max_elements):
    layers = hard(model_group, "layers") if "layers" in model_group else None
    if not isinstance(layers, h5py.Group):
        return
    for key in layers:
        group = hard(layers, key)
        if not isinstance(group, h5py.Group) or "vars" not in group:
            continue
        own = hard(group, "vars")
        name = name_of(own) if isinstance(own, h5py.Group) else None
        if name is None:
            continue
        here = path + [name]
        members = [hard(own, str(i)) for i in sorted(int(k) for k in own if k.isdigit())]
        weights = [summary(m, max_elements) for m in members if local_dataset(m)]
        if weights:
            out.append({"path": here, "weights": weights})
        walk(group, here, out, max_elements)


def main():
    path, max_ratio, ratio_floor, max_elements = sys.argv[1], *map(int, sys.argv[2:5])
    out = []
    with zipfile.ZipFile(path) as archive:
        if WEIGHTS not in archive.namelist():
            print(json.dumps({"layers": []}))
            return
        info = archive.getinfo(WEIGHTS)
        if info.file_size > ratio_floor and info.file_size > max_ratio * info.compress_size:
            raise Refused(
                f"{WEIGHTS} inflates from {info.compress_size} to {info.file_size} bytes, "
                f"past the limit of {max_ratio}:1"
            )
        if info.file_size:
            with archive.open(WEIGHTS) as member, h5py.File(member, "r") as f:
                walk(f, [], out, max_elements)
    print(json.dumps({"layers": out}))


if __name__ == "__main__":
    try:
        main()
    except Refused as e:
        print(f"refused: {e}", file=sys.stderr)
        sys.exit(2)
