"""Write the small models `semfuzz check`'s fix search and nested-model tests corrupt: each
model's `model.to_json()` as fuzzer/tests/data/check/<name>.json.

- `reshape_dropout`: a Reshape and a Dropout, whose arguments only a target_shape or a
  float can fix;
- `nested`: a Functional backbone and a Sequential head used as layers, their outputs added.

Usage, from the repository root: .venv/bin/python fuzzer/tests/data/check/make_models.py
"""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent


def reshape_dropout():
    x = keras.Input((6, 4), name="series")
    h = keras.layers.Reshape((4, 6), name="reshape")(x)
    h = keras.layers.Dense(5, name="dense")(h)
    h = keras.layers.Dropout(0.5, name="drop")(h)
    h = keras.layers.ReLU(negative_slope=0.1, name="relu")(h)
    return keras.Model(x, h, name="reshape_dropout")


def nested():
    inner_in = keras.Input((8, 8, 3), name="inner_in")
    h = keras.layers.Conv2D(4, 3, name="inner_conv")(inner_in)
    h = keras.layers.Flatten(name="inner_flat")(h)
    backbone = keras.Model(inner_in, h, name="backbone")
    head = keras.Sequential(
        [keras.layers.Dense(8, name="head_dense"), keras.layers.Dropout(0.5, name="head_drop")],
        name="head",
    )
    x = keras.Input((8, 8, 3), name="image")
    f = backbone(x)
    a = keras.layers.Dense(8, name="dense_a")(f)
    b = head(f)
    s = keras.layers.Add(name="add")([a, b])
    return keras.Model(x, s, name="nested")


def main():
    for name, build in [("reshape_dropout", reshape_dropout), ("nested", nested)]:
        model = build()
        (OUT / f"{name}.json").write_text(model.to_json() + "\n")
        print(name, len(model.layers), "layers")


if __name__ == "__main__":
    main()
