"""The device path: operators, measures, covariates and scorer preprocessing as batched torch ops.

Why: on a CUDA run each decoded image should go to the device once and stay there through
every dose, measure and scorer forward. The numpy/OpenCV plugins (plugins/operators.py,
plugins/measures.py, plugins/colour.py) stay the CPU reference; these torch versions follow
them step by step and tests/gpu holds them equal on the CPU (1e-3 CIELAB units, 1/255 in
pixels, 1e-4 for measures), so the device path is tested on machines without a GPU.

torch is imported inside this package only; nothing in the core imports it.

- colour.py: sRGB ↔ CIELAB (plugins.colour's constants and clipping rule).
- operators.py: `TORCH_OPERATORS[name](params, image, mask, doses, seed, image_hash)`.
- measures.py: `TORCH_MEASURES[name]` / `TORCH_COVARIATES[name]`.
- preprocess.py: a scorer's `Preprocess` applied to device tensors.
- pipeline.py: one image through operator → measures → scorers without leaving the device.
"""
