"""What builder/main.py runs for every environment before the host build or the base builder:
validate the options, hand ESP builds their pinned source trees (source_step), run the model
step, then, for builds that compile ExecuTorch's runtime from those sources, the kernel step
(the model's CPU kernels and their registration), print the report, check RAM, add the
generated files and the Kconfig-resolved macros to the build, and define the menuconfig target
(host/arduino)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from executorch_espnn.firmware import kernels as kernel_step
from executorch_espnn.firmware import options, sources
from executorch_espnn.firmware import step as model_step
from executorch_espnn.firmware import summary as report
from executorch_espnn.firmware.model_info import ModelInfo

from . import kconfig_glue, partition_step, runtime_build, source_step

# Targets that never need the model (they only inspect or configure the project).
_NO_MODEL_TARGETS = {"menuconfig", "envdump", "idedata", "__idedata", "sizedata"}


def _fail(env: Any, message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    env.Exit(1)


def _frameworks(env: Any) -> list[str]:
    return [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]


def _command_line_targets() -> list[str]:
    from SCons.Script import COMMAND_LINE_TARGETS

    return [str(t) for t in COMMAND_LINE_TARGETS]


def read_runtime(env: Any) -> str:
    """custom_executorch_runtime: "source" or "wheel" (options.runtime_choice)."""
    value = env.GetProjectConfig().get("env:" + env["PIOENV"], options.RUNTIME, None)
    return options.runtime_choice(lambda _: None if value is None else str(value),
                                  env.PioPlatform().is_host_env())


def _option_getter(env: Any) -> Any:
    config = env.GetProjectConfig()
    section = "env:" + env["PIOENV"]

    def get(name: str) -> str | None:
        value = config.get(section, name, None)
        if isinstance(value, list):  # a multi-line value: one model (name = path) per line
            value = "\n".join(str(v) for v in value)
        return None if value is None else str(value)

    return get


def read_models(env: Any) -> list[options.ModelOptions]:
    """Every model of the env: [] for none, one unnamed, or several named ones."""
    config = env.GetProjectConfig()
    section = "env:" + env["PIOENV"]
    mcu = str(env.BoardConfig().get("build.mcu", "")) if "BOARD" in env else ""
    return options.parse_models(_option_getter(env), list(config.options(section)),
                                Path(env.subst("$PROJECT_DIR")), mcu)


def read_storage(env: Any, models: list[options.ModelOptions]) -> options.StorageOptions:
    """custom_executorch_storage / custom_executorch_partition_size (options.storage_choice)."""
    section = "env:" + env["PIOENV"]
    config = env.GetProjectConfig()

    def get(name: str) -> str | None:
        value = config.get(section, name, None)
        return None if value is None else str(value)

    return options.storage_choice(get, max((m.selftest for m in models), default=0), len(models),
                                  any(m.profile for m in models))


def _setup_partition(env: Any, info: ModelInfo, image: Path, is_host: bool) -> bool:
    """custom_executorch_storage = partition: the table (ESP) and `uploadmodel`."""
    storage = info.storage
    if storage is None:
        _fail(env, "model_info.json has no storage section; delete the build folder and build again")
        return False
    try:
        if is_host:
            partition_step.setup_host(env, storage, image)
            where = storage.host_image_path
        else:
            partition_step.setup_esp(env, storage, image)
            where = f"0x{env['ESPNN_MODEL_PARTITION']['offset']:x}"
    except partition_step.PartitionError as exc:
        _fail(env, str(exc))
        return False
    print(f"ExecuTorch model: in partition '{storage.label}' ({storage.size // 1024} KiB at {where}, "
          f"image {storage.image_bytes} bytes); write it with `pio run -t uploadmodel`")
    return True


class _Stop(Exception):
    """A setup stage's error: its message is what ``pio run`` prints (``_fail``)."""


Built = list[tuple[options.ModelOptions, model_step.StepPaths, ModelInfo, bool]]


def setup(env: Any) -> None:
    """The model step's hand-off to the build, in named stages; the first error stops it with
    one line (``Error: …``, exit code 1)."""
    try:
        _setup(env)
    except _Stop as stop:
        _fail(env, str(stop))


def _setup(env: Any) -> None:
    platform = env.PioPlatform()
    platform_dir = Path(platform.get_dir())
    try:
        models = read_models(env)
        shared = options.shared_arena(_option_getter(env))
        runtime = read_runtime(env)
        storage = read_storage(env, models)
    except options.OptionError as exc:
        raise _Stop(str(exc)) from exc
    is_espidf_esp = "espidf" in _frameworks(env) and not platform.is_host_env()
    kconf = _apply_kconfig(env, platform_dir, is_espidf_esp, any(m.profile for m in models))
    if not _model_work_needed(env, models, storage, is_espidf_esp):
        return
    _add_source_trees(env, platform, runtime)
    step_out = Path(env.subst("$BUILD_DIR")) / model_step.OUT_SUBDIR
    built = _lower_models(env, models, storage, step_out, platform_dir, shared)
    _report_models(env, platform, built, kconf, shared)
    if runtime == "source":
        _select_kernels(env, step_out, platform_dir, built)
    _hand_over(env, platform, built, storage, shared, step_out, is_espidf_esp)


def _apply_kconfig(env: Any, platform_dir: Path, is_espidf_esp: bool, profile: bool = False) -> Any:
    """The env's Kconfig: ESP-IDF's own menuconfig on espidf ESP builds, ours elsewhere
    (``profile``: custom_executorch_profile = yes forces CONFIG_ESPNN_ET_PROFILE on there; an
    ESP-IDF build takes it from its sdkconfig, docs/platformio.md)."""
    kconf = kconfig_glue.for_env(env, platform_dir, profile)
    if not is_espidf_esp:
        kconfig_glue.add_menuconfig_target(env, kconf)
        try:
            kconfig_glue.apply(env, kconf)
        except kconfig_glue.KconfigGlueError as exc:
            raise _Stop(str(exc)) from exc
    env["ESPNN_KCONFIG"] = kconf
    return kconf


def _model_work_needed(env: Any, models: list[options.ModelOptions], storage: options.StorageOptions,
                       is_espidf_esp: bool) -> bool:
    """False when there is no model, or the targets asked for need none (clean, menuconfig)."""
    targets = set(_command_line_targets())
    if partition_step.UPLOAD_TARGET in targets and not storage.is_partition:
        raise _Stop(f"`pio run -t {partition_step.UPLOAD_TARGET}` writes a model partition, and this env "
                    f"embeds its model in the app ({options.STORAGE} = embedded): set "
                    f"`{options.STORAGE} = partition` or upload the app with `pio run -t upload`")
    if not models:
        return False
    return not (targets and targets <= _NO_MODEL_TARGETS and not is_espidf_esp)


def _add_source_trees(env: Any, platform: Any, runtime: str) -> None:
    """The runtime's, flatbuffers' and (ESP boards) ESP-NN's pinned trees, before the
    lowering's minutes."""
    try:
        if not platform.is_host_env():
            source_step.add_sources(env)
        elif runtime == "source":
            source_step.add_runtime_sources(env)
    except sources.SourceError as exc:
        raise _Stop(str(exc)) from exc


def _lower_models(env: Any, models: list[options.ModelOptions], storage: options.StorageOptions,
                  step_out: Path, platform_dir: Path, shared: bool) -> Built:
    """Each model its own lowering, cache and generated files."""
    built: Built = []
    for opts in models:
        paths = model_step.paths_for(step_out, opts)
        try:
            ran = model_step.run(opts, paths, env.subst("$PYTHONEXE"), platform_dir, storage, shared)
            info = model_step.load_info(paths)
        except model_step.StepError as exc:
            raise _Stop(str(exc)) from exc
        built.append((opts, paths, info, ran))
    return built


def _report_models(env: Any, platform: Any, built: Built, kconf: Any, shared: bool) -> None:
    """The build summary and the RAM check against the board's budget (an error when it
    cannot fit, a warning when it is tight)."""
    infos = [info for _, _, info, _ in built]
    any_ran = any(ran for *_, ran in built)
    try:
        budget = _ram_budget(env, platform, infos, kconf, shared)
    except kconfig_glue.KconfigGlueError as exc:
        raise _Stop(str(exc)) from exc
    for opts, paths, _, ran in built:
        if not ran:
            what = f"{opts.name} ({opts.model.name})" if opts.name else opts.model.name
            print(f"ExecuTorch model: {what} is up to date ({paths.pte})")
    if any_ran and len(built) == 1:
        for line in report.summary_lines(infos[0], budget):
            print(line)
    elif any_ran:
        for line in report.models_summary_lines([(o.name, i, r) for o, _, i, r in built], budget, shared):
            print(line)
    problem = report.fit_problem(budget) if budget is not None else None
    if problem is not None:
        message, is_error = problem
        if is_error:
            raise _Stop(message)
        if any_ran:
            print(f"Warning: {message}")


def _select_kernels(env: Any, step_out: Path, platform_dir: Path, built: Built) -> None:
    """The CPU kernels the models' programs call, and their registration."""
    try:
        kernels, _ = kernel_step.run(
            step_out, runtime_build.list_file(platform_dir / "espnn_component"),
            env.subst("$PYTHONEXE"), platform_dir, [paths.pte for _, paths, _, _ in built])
    except kernel_step.KernelStepError as exc:
        raise _Stop(str(exc)) from exc
    env["ESPNN_KERNELS"] = kernels


def _hand_over(env: Any, platform: Any, built: Built, storage: options.StorageOptions, shared: bool,
               step_out: Path, is_espidf_esp: bool) -> None:
    """The generated files into the build: the environment the framework steps read, and on
    host and Arduino the model objects themselves."""
    first, info = built[0][1], built[0][2]
    if storage.is_partition and not _setup_partition(env, info, first.image, platform.is_host_env()):
        return
    env["ESPNN_MODEL_DIR"] = str(first.out)
    env["ESPNN_MODEL_GEN_DIR"] = str(first.gen)
    env["ESPNN_MODEL_INFO"] = info
    gen_dirs = [str(paths.gen) for _, paths, _, _ in built]
    if len(built) > 1:
        gen_dirs.append(str(_write_models_header(step_out, built, shared)))
    env["ESPNN_MODEL_GEN_DIRS"] = gen_dirs
    # every model embedded: an engine compiled by this build (Arduino) links only the op families
    # their model_pte_data.S select; ESP-IDF's model components say the same themselves
    env["ESPNN_ENGINE_OPS_FROM_MODELS"] = not storage.is_partition
    if not is_espidf_esp:
        # Host and Arduino: compile the generated descriptor + bytes with the program (with a
        # partition, the header only: the model is in its partition).  The .incbin'd .pte is
        # invisible to SCons's scanner, hence the explicit dependency.
        env.Append(CPPPATH=gen_dirs)
        for _, paths, _, _ in built if not storage.is_partition else []:
            obj = env.Object(str(paths.out / paths.source.with_suffix(".o").name), str(paths.source))
            env.Depends(obj, str(paths.pte))
            env.Append(PIOBUILDFILES=obj)


# $BUILD_DIR/executorch/espnn_models/: espnn_models.h (beside models/, so no model name collides)
MODELS_GEN = "espnn_models"


def _write_models_header(
    step_out: Path,
    built: list[tuple[options.ModelOptions, model_step.StepPaths, ModelInfo, bool]],
    shared: bool,
) -> Path:
    """espnn_models.h (every model's header, ESPNN_SHARED_ARENA_BYTES) and its ESP-IDF
    component file, in their own folder."""
    from executorch_espnn import rendering

    infos = [info for _, _, info, _ in built]
    ctx = {
        "models": [{"name": o.name, "arena_bytes": i.sizes.arena_bytes} for o, _, i, _ in built],
        "shared": shared,
        "shared_bytes": report.shared_arena_bytes(infos),
        "arenas_sum": sum(i.sizes.arena_bytes for i in infos),
    }
    folder = step_out / MODELS_GEN
    folder.mkdir(parents=True, exist_ok=True)
    rendering.write_if_changed(folder / "espnn_models.h", rendering.render("espnn_models.h.j2", **ctx))
    rendering.write_if_changed(folder / "CMakeLists.txt",
                               rendering.render("espnn_models_component.cmake.j2", **ctx))
    return folder


def _ram_budget(env: Any, platform: Any, infos: list[ModelInfo], kconf: Any,
                shared: bool = False) -> report.RamBudget | None:
    if platform.is_host_env():
        return None
    board = env.BoardConfig()
    policy = kconf.placement() if kconf is not None else "auto"
    cap = kconf.internal_cap() if kconf is not None else 0
    ram = int(board.get("upload.maximum_ram_size", 0) or 0)
    if cap and (not ram or cap < ram):
        available, source = cap, "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"
    else:
        available, source = ram, f"board {board.id}: upload.maximum_ram_size"
    return report.RamBudget(report.models_ram_needed(infos, shared), available, source, policy)
