"""Optuna is an optional dependency of cclab (the `calibrate` extra); importing this module
without it raises ModuleNotFoundError naming what to install."""

INSTALL_HINT = "pip install 'cclab[calibrate]'"

try:
    import optuna  # noqa: F401
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(
        f"calibration needs Optuna, which is not installed: {INSTALL_HINT}", name="optuna"
    ) from missing
