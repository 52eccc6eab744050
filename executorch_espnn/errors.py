"""One exception hierarchy; every message says what is wrong and what to do about it."""

from __future__ import annotations


class EspNNError(Exception):
    """Base class of every error this package raises on purpose."""


class ModelFileError(EspNNError):
    """A model file (.py/.pt2/.pte) is missing, unreadable or lacks what it must define."""


class CalibrationError(EspNNError):
    """Calibration data does not match the model's example inputs."""


class ExportError(EspNNError):
    """torch.export failed on the user's model."""


class UnsupportedTargetError(EspNNError):
    """The requested target chip is not one we know."""


class StrictModeError(EspNNError):
    """strict=True and some operators stayed on the CPU; the message lists each with its reason."""


class LoweringError(EspNNError):
    """The lowering pipeline failed for a reason other than the above."""


class PteError(EspNNError):
    """A .pte file is not one this package can use (wrong backend, corrupt, wrong version)."""


class HostBuildError(EspNNError):
    """The host runtime library could not be built (compiler or cmake missing, build failed)."""


class HostRuntimeError(EspNNError):
    """Loading or running a program on the host runtime failed."""


class KconfigError(EspNNError):
    """The Kconfig or an sdkconfig file cannot be resolved (unknown option, refused value)."""


class SelectiveBuildError(EspNNError):
    """The CPU operator list cannot be turned into a kernel registration."""


class QuantizerConfigError(EspNNError):
    """A quantization config asks for a scheme ESP-NN cannot execute."""


class DelegateInputError(EspNNError, ValueError):
    """Arrays passed to a delegate (reference or host run) do not match its inputs."""


class RuntimeSourcesError(EspNNError):
    """The ExecuTorch runtime source list or the source trees it points into are not usable."""


class ComponentSourcesError(EspNNError):
    """The component's own source lists (engine/sources.cmake and the others) cannot be read."""


class OptionValueError(EspNNError):
    """A lowering option has a value that cannot work (e.g. ``selftest`` larger than the data).

    ``str()`` spells the option as ``lower()``'s keyword (``selftest=10: ...``); ``spelled()``
    as another front end names it (``--selftest 10``, ``custom_executorch_selftest = 10``), so
    the one line a user reads names the option they wrote.
    """

    def __init__(self, option: str, value: object, problem: str, fix: str) -> None:
        self.option, self.value, self.problem, self.fix = option, value, problem, fix
        super().__init__(self.spelled(f"{option}="))

    def spelled(self, name: str) -> str:
        """The message with the option written as ``name`` (e.g. ``"--selftest "``)."""
        return f"{name}{self.value}: {self.problem}; {self.fix}"


def check_choice(option: str, value: object, choices: tuple[str, ...], problem: str, fix: str) -> str:
    """``value`` stripped and lower-cased when it is one of ``choices`` (a lowering keyword's
    string choices: ``io``, ``input_layout``), else OptionValueError(option, value, problem, fix)."""
    if isinstance(value, str) and value.strip().lower() in choices:
        return value.strip().lower()
    raise OptionValueError(option, value if isinstance(value, str) else repr(value), problem, fix)


class ValidationDataError(EspNNError):
    """Validation data (held-out samples, optional labels) does not match the model."""


class MissingResourceError(EspNNError, FileNotFoundError):
    """A non-Python part of the package (component sources, templates, platform) is missing."""


class ScaffoldError(EspNNError):
    """``init`` cannot make the project as asked; nothing was written."""


class PlatformInstallError(EspNNError):
    """PlatformIO is missing or refused the platform; the message says what to do."""
