"""Write the keras.applications architectures `semfuzz check` is tested on: each model's
`model.to_json()` (config only, built with weights=None on a small input), as
fuzzer/tests/data/applications/<name>.json.

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


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, build, shape in ARCHITECTURES:
        model = build(weights=None, input_shape=shape, classes=10)
        (OUT / f"{name}.json").write_text(model.to_json() + "\n")
        print(name, len(model.layers), "layers")


if __name__ == "__main__":
    main()
