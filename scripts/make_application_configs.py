"""Write the keras.applications architectures `semfuzz check` is tested on: each model's
`model.to_json()` (config only, built with weights=None on a small input), as
fuzzer/tests/data/applications/<name>.json; and two small models the tests corrupt in
ways the applications cannot show (cropping, PReLU axes, dense branches, open sizes).

Usage, from the repository root: .venv/bin/python scripts/make_application_configs.py
"""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "fuzzer" / "tests" / "data" / "applications"

# (file name, constructor, input shape): the smallest inputs each architecture accepts, and
# a 10-class head so the classifier (Dense + softmax) is part of the model.
ARCHITECTURES = [
    ("resnet50", keras.applications.ResNet50, (32, 32, 3)),
    ("mobilenet_v2", keras.applications.MobileNetV2, (32, 32, 3)),
    ("vgg16", keras.applications.VGG16, (32, 32, 3)),
    ("densenet121", keras.applications.DenseNet121, (32, 32, 3)),
    ("efficientnet_b0", keras.applications.EfficientNetB0, (32, 32, 3)),
    ("convnext_tiny", keras.applications.ConvNeXtTiny, (32, 32, 3)),
    ("xception", keras.applications.Xception, (71, 71, 3)),
]


def small_models():
    """(file name, model): a small CNN with a cropping, a PReLU and two dense branches added
    together, and a sequence model whose length is open (None)."""
    x = keras.Input((8, 8, 3), name="image")
    c = keras.layers.Cropping2D(((1, 1), (1, 1)), name="crop")(x)
    p = keras.layers.PReLU(name="prelu")(c)
    f = keras.layers.Flatten(name="flat")(p)
    a = keras.layers.Dense(8, name="dense_a")(f)
    b = keras.layers.Dense(8, name="dense_b")(f)
    s = keras.layers.Add(name="add")([a, b])
    o = keras.layers.Dense(3, activation="softmax", name="out")(s)
    small_cnn = keras.Model(x, o, name="small_cnn")
    seq = keras.Input((None, 3), name="sequence")
    h = keras.layers.Conv1D(4, 5, name="conv")(seq)
    h = keras.layers.GlobalMaxPooling1D(name="pool")(h)
    h = keras.layers.Dense(2, activation="exponential", name="rate")(h)
    open_sequence = keras.Model(seq, h, name="open_sequence")
    return [("small_cnn", small_cnn), ("open_sequence", open_sequence)]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, build, shape in ARCHITECTURES:
        model = build(weights=None, input_shape=shape, classes=10)
        (OUT / f"{name}.json").write_text(model.to_json() + "\n")
        print(name, len(model.layers), "layers")
    for name, model in small_models():
        (OUT / f"{name}.json").write_text(model.to_json() + "\n")
        print(name, len(model.layers), "layers")


if __name__ == "__main__":
    main()
