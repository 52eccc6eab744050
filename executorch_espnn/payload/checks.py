"""One validator check per opcode, registered in ``CHECKS`` by the family modules below
(importing them registers their checks); ``payload.validate`` dispatches through it."""

from .families.check_registry import CHECKS, OpCheck, check

# importing the op families registers their checks
from .families.conv import check as _conv  # noqa: F401
from .families.conv_transpose import check as _conv_transpose  # noqa: F401
from .families.elementwise import check as _elementwise  # noqa: F401
from .families.fully_connected import check as _fully_connected  # noqa: F401
from .families.lut import check as _lut  # noqa: F401
from .families.matmul import check as _matmul  # noqa: F401
from .families.mean import check as _mean  # noqa: F401
from .families.movement import check as _movement  # noqa: F401
from .families.norm import check as _norm  # noqa: F401
from .families.pool import check as _pool  # noqa: F401
from .families.prelu import check as _prelu  # noqa: F401
from .families.quantize import check as _quantize  # noqa: F401
from .families.resize import check as _resize  # noqa: F401
from .families.softmax import check as _softmax  # noqa: F401

__all__ = ["CHECKS", "OpCheck", "check"]
