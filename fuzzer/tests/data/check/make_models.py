"""Write the small models `semfuzz check`'s fix search and nested-model tests corrupt: each
model's `model.to_json()` as fuzzer/tests/data/check/<name>.json.

- `reshape_dropout`: a Reshape and a Dropout, whose arguments only a target_shape or a
  float can fix;
- `nested`: a Functional backbone and a Sequential head used as layers, their outputs added;
- `stored_weights.keras`: a model saved with weights set so that its numeric hazards differ
  from what its initializers' ranges give (see `stored_weights`).

Usage, from the repository root: .venv/bin/python fuzzer/tests/data/check/make_models.py
"""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

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


def stored_weights():
    """Four branches on inputs in [-1, 1], each judged differently on the stored weights than
    on the initializers' ranges:
    - `grow` (exponential, glorot-uniform kernel: exp's argument stays below 4) stores a
      kernel of 30s, so the argument reaches 120: exp overflows float32;
    - `shrink` (exponential, kernel initialised uniformly in [-100, 100]) stores a kernel of
      0.01s: proven safe;
    - `bn` stores a moving variance reaching -0.5: variance + epsilon can reach 0;
    - `backbone/inner` (a nested model) stores a kernel of 40s: exp overflows.
    """
    x = keras.Input((4,), name="x")
    grow = keras.layers.Dense(4, activation="exponential", name="grow")
    shrink = keras.layers.Dense(
        4,
        activation="exponential",
        kernel_initializer=keras.initializers.RandomUniform(-100.0, 100.0),
        name="shrink",
    )
    bn = keras.layers.BatchNormalization(name="bn")
    inner_in = keras.Input((4,), name="inner_in")
    inner = keras.layers.Dense(2, activation="exponential", name="inner")
    backbone = keras.Model(inner_in, inner(inner_in), name="backbone")
    # The backbone's output goes through a layer of its own: Keras writes a nested model's
    # output that is a model output with a call index the oracle's reader refuses.
    after = keras.layers.Activation("linear", name="after")(backbone(x))
    model = keras.Model(x, [grow(x), shrink(x), bn(x), after], name="stored_weights")
    grow.set_weights([np.full((4, 4), 30.0), np.zeros(4)])
    shrink.set_weights([np.full((4, 4), 0.01), np.zeros(4)])
    bn.set_weights([np.ones(4), np.zeros(4), np.zeros(4), np.array([-0.5, 1.0, 1.0, 1.0])])
    inner.set_weights([np.full((4, 2), 40.0), np.zeros(2)])
    return model


def main():
    for name, build in [("reshape_dropout", reshape_dropout), ("nested", nested)]:
        model = build()
        (OUT / f"{name}.json").write_text(model.to_json() + "\n")
        print(name, len(model.layers), "layers")
    stored_weights().save(OUT / "stored_weights.keras")
    print("stored_weights.keras")


if __name__ == "__main__":
    main()
