"""``deepcq.calibration``."""

from deepcontext.query.calibration import CalibrationReport, LabeledExample, ThresholdStats, calibrate

__all__ = ["CalibrationReport", "LabeledExample", "ThresholdStats", "calibrate"]
