"""One validator check per opcode, registered in ``CHECKS`` by the family modules below
(importing them registers their checks); ``payload.validate`` dispatches through it."""

from . import (  # noqa: F401 - importing the op families registers their checks
    conv,
    conv_transpose,
    elementwise,
    fully_connected,
    lut,
    matmul,
    mean,
    movement,
    norm,
    pool,
    prelu,
    quantize,
    resize,
    softmax,
)
from .registry import CHECKS, OpCheck, check

__all__ = ["CHECKS", "OpCheck", "check"]
