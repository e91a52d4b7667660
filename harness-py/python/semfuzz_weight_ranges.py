"""The value range of every stored weight of a `.keras` file, for `semfuzz check`'s
numeric-hazard analysis. Reads `model.weights.h5` from the archive with h5py and nothing
else: neither TensorFlow nor Keras is imported, and nothing in the file is executed.

Usage: python -I semfuzz_weight_ranges.py MODEL.keras

Prints one JSON object: {"layers": [{"path": [names...], "weights": [{"shape", "min",
"max", "nan"}, ...]}, ...]}, or {"layers": []} when the archive holds no weights file.

Keras 3 writes a model's weights as `layers/<key>/vars/<i>`, a nested model's under
`layers/<key>/layers/<key>/vars/<i>`, where <key> comes from the class name (`dense`,
`dense_1`) and the `vars` group's `name` attribute is the layer's name; <i> numbers the
layer's own variables, trainable first (its `get_weights()` order).
"""

import io
import json
import math
import sys
import zipfile

import h5py
import numpy as np

WEIGHTS = "model.weights.h5"


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


def summary(dataset):
    values = dataset[()]
    if dataset.attrs.get("dtype") == "bfloat16":
        # Stored as raw 16-bit patterns: the high half of a float32.
        values = (np.asarray(values).astype(np.uint32) << 16).view(np.float32)
    values = np.asarray(values, dtype=np.float64)
    out = {"shape": list(values.shape), "min": None, "max": None, "nan": False}
    if values.size:
        nan = np.isnan(values)
        out["nan"] = bool(nan.any())
        if not nan.all():
            out["min"] = number(np.nanmin(values))
            out["max"] = number(np.nanmax(values))
    return out


def name_of(group):
    name = group.attrs.get("name")
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if isinstance(name, str) else None


def walk(model_group, path, out):
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
        weights = [summary(m) for m in members if local_dataset(m)]
        if weights:
            out.append({"path": here, "weights": weights})
        walk(group, here, out)


def main():
    with zipfile.ZipFile(sys.argv[1]) as archive:
        if WEIGHTS not in archive.namelist():
            print(json.dumps({"layers": []}))
            return
        data = archive.read(WEIGHTS)
    out = []
    if data:
        with h5py.File(io.BytesIO(data), "r") as f:
            walk(f, [], out)
    print(json.dumps({"layers": out}))


if __name__ == "__main__":
    main()
