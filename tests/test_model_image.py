"""The model image (custom_executorch_storage = partition): the Python writer/reader of
executorch_espnn/model_image.py against the C parser, checks and SHA-256 of
espnn_component/runtime/espnn_model_image.c (compiled with ASan/UBSan: corrupt images must
give an error line, never a crash), and the storage options.  Golden hashes come from hashlib."""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
from pathlib import Path

import pytest

from executorch_espnn import model_image as mi
from tests.component_helpers import CDIR, COMPONENT, compile_c

TENSORS_IN = [{"name": "x", "dtype_name": "float32", "dims": [1, 4], "scale": 0.02, "zero_point": -3}]
TENSORS_OUT = [{"name": "output0", "dtype_name": "int8", "dims": [1, 3], "scale": 0.5, "zero_point": 7}]


def _image(pte: bytes = b"", **over: object) -> mi.ModelImage:
    pte = pte or bytes(random.Random(1).randrange(256) for _ in range(1000))
    fields: dict[str, object] = dict(
        pte=pte, executorch_version="1.5.1", package_version="0.1.0", format_major=1,
        format_minor=4, target="esp32s3",
        sizes={"arena_bytes": 1024, "state_bytes": 512, "planned_bytes": 256,
               "method_allocator_bytes": 300, "temp_allocator_bytes": 0, "pointer_bytes": 8},
        signature=mi.io_signature(TENSORS_IN, TENSORS_OUT), n_inputs=1, n_outputs=1,
        quant=((0.015625, -3), (0.5, 7)),  # float32-exact scales
    )
    fields.update(over)
    return mi.ModelImage(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("image") / "model_image_driver"
    return compile_c(out, [COMPONENT / "runtime" / "espnn_model_image.c", CDIR / "model_image_driver.c"],
                     [COMPONENT / "include"])


def _run(driver: Path, *args: str) -> str:
    proc = subprocess.run([str(driver), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_sha256_matches_hashlib(driver: Path, tmp_path: Path) -> None:
    rng = random.Random(7)
    # every padding case: empty, < 56, 55/56/63/64/65 (one or two tail blocks), several blocks
    for n in (0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 4099, 70001):
        data = bytes(rng.randrange(256) for _ in range(n))
        f = tmp_path / f"d{n}"
        f.write_bytes(data)
        assert _run(driver, "sha256", str(f)) == hashlib.sha256(data).hexdigest(), n


def test_python_round_trip_and_layout() -> None:
    img = _image()
    data = img.to_bytes()
    assert len(data) == mi.HEADER_SIZE + len(img.pte)
    assert data[:8] == b"ESPNNIMG" and mi.PTE_OFFSET % 128 == 0
    back = mi.read(data)
    assert back == img
    assert mi.signature_sha256_of(data) == hashlib.sha256(img.signature.encode()).hexdigest()
    assert img.signature == "in x:float32[1,4]; out output0:int8[1,3]"


def test_c_parser_reads_what_python_wrote(driver: Path, tmp_path: Path) -> None:
    img = _image()
    f = tmp_path / "m.img"
    f.write_bytes(img.to_bytes() + b"\xff" * 300)  # a partition is larger than its image
    line = _run(driver, "parse", str(f))
    fields = dict(re.findall(r"(\w+)=(\S+)", line.split(" sig=")[0]))
    assert line.startswith("ok "), line
    assert fields["pte_offset"] == str(mi.PTE_OFFSET) and fields["pte_size"] == str(len(img.pte))
    assert fields["sha"] == hashlib.sha256(img.pte).hexdigest()
    assert fields["sigsha"] == hashlib.sha256(img.signature.encode()).hexdigest()
    assert (fields["et"], fields["pkg"], fields["format"], fields["target"]) == ("1.5.1", "0.1.0", "1.4", "esp32s3")
    assert [fields[k] for k in ("arena", "state", "planned", "method", "temp", "pointer")] == \
        ["1024", "512", "256", "300", "0", "8"]
    assert fields["quant"] == "0.015625/-3,0.5/7"
    assert line.split(" sig=")[1] == img.signature


def _check_args(img: mi.ModelImage, **over: str) -> list[str]:
    a = {"et": img.executorch_version, "pkg": img.package_version, "major": str(img.format_major),
         "minor": str(img.format_minor), "target": img.target,
         "sigsha": mi.signature_sha256(img.signature), "sig": img.signature, "nin": "1", "nout": "1"}
    a.update(over)
    return list(a.values())


def test_check_names_image_and_firmware(driver: Path, tmp_path: Path) -> None:
    img = _image()
    f = tmp_path / "m.img"
    f.write_bytes(img.to_bytes())
    assert _run(driver, "check", str(f), *_check_args(img)) == "ok"
    other = "in x:float32[1,8]; out output0:int8[1,3]"
    msg = _run(driver, "check", str(f), *_check_args(img, sigsha=mi.signature_sha256(other), sig=other))
    assert msg.startswith("error: ") and img.signature in msg and other in msg
    assert "pio run -t uploadmodel" in msg
    msg = _run(driver, "check", str(f), *_check_args(img, target="esp32"))
    assert "lowered for esp32s3" in msg and "built for esp32:" in msg and "uploadmodel" in msg
    msg = _run(driver, "check", str(f), *_check_args(img, et="1.6.0"))
    assert "for ExecuTorch 1.5.1" in msg and "for ExecuTorch 1.6.0" in msg


def test_corrupt_images_are_refused_never_crash(driver: Path, tmp_path: Path) -> None:
    data = _image().to_bytes()
    f = tmp_path / "bad.img"

    def parse(blob: bytes) -> str:
        f.write_bytes(blob)
        return _run(driver, "parse", str(f))

    assert "smaller than a model image header" in parse(data[:100])
    assert "does not fit" in parse(data[:-1])  # truncated .pte
    assert "no model image" in parse(b"\xff" * 4096)  # an erased partition
    wrong = bytearray(data)
    wrong[8] = 2  # format version 2 (the header checksum is checked after the version)
    assert "format version 2" in parse(bytes(wrong))
    rng = random.Random(3)
    for _ in range(60):  # a flipped bit anywhere is caught by a checksum or a field check
        flipped = bytearray(data)
        bit = rng.randrange(len(flipped) * 8)
        flipped[bit // 8] ^= 1 << (bit % 8)
        out = parse(bytes(flipped))
        assert out.startswith("error: "), (bit, out)
    hdr = bytearray(data)
    hdr[120] ^= 1  # a pool size: only the header checksum sees it
    assert "header checksum" in parse(bytes(hdr))
    pte = bytearray(data)
    pte[mi.HEADER_SIZE + 10] ^= 0x40
    assert "sha256" in parse(bytes(pte)) and "uploadmodel" in parse(bytes(pte))


def test_python_reader_refuses_the_same() -> None:
    data = _image().to_bytes()
    with pytest.raises(mi.ModelImageError, match="corrupt"):
        mi.read(data[:mi.HEADER_SIZE] + bytes([data[mi.HEADER_SIZE] ^ 1]) + data[mi.HEADER_SIZE + 1:])
    with pytest.raises(mi.ModelImageError, match="shorter"):
        mi.read(data[:10])


def test_partition_size_rule() -> None:
    assert mi.partition_size(1000, 25) == 64 * 1024
    assert mi.partition_size(100_000, 25) == 128 * 1024  # 125,000 -> two 64 KiB steps
    assert mi.partition_size(100_000, 25) == mi.partition_size(100_400, 25)  # retrained: same size
    assert mi.partition_size(65536, 0) == 65536


def test_storage_options_and_messages() -> None:
    from executorch_espnn.firmware import options as o

    def choice(**kw: str) -> o.StorageOptions:
        return o.storage_choice(lambda n: kw.get(n.removeprefix(o.PREFIX)))

    assert choice() == o.StorageOptions("embedded", 0)
    assert choice(storage="partition") == o.StorageOptions("partition", 0)
    assert choice(storage="partition", partition_size="1M").partition_size == 1 << 20
    assert choice(storage="partition", partition_size="0x80000").partition_size == 0x80000
    with pytest.raises(o.OptionError) as e:
        choice(storage="flash")
    msg = str(e.value)
    assert msg.startswith("custom_executorch_storage = flash: unknown value") and "embedded" in msg \
        and "partition" in msg and "\n" not in msg
    with pytest.raises(o.OptionError, match=r"custom_executorch_partition_size = 1000: .*multiple of 4K"):
        choice(storage="partition", partition_size="1000")
    with pytest.raises(o.OptionError, match="not a size"):
        choice(storage="partition", partition_size="big")
    with pytest.raises(o.OptionError, match="is set but custom_executorch_storage is not partition"):
        choice(partition_size="512K")
    with pytest.raises(o.OptionError, match=r"custom_executorch_selftest = 4: .* remove"):
        o.storage_choice(lambda n: "partition" if n == o.STORAGE else None, selftest=4)
    # the partition holds one model: several (custom_executorch_model's name = path lines) are refused
    with pytest.raises(o.OptionError) as e:
        o.storage_choice(lambda n: "partition" if n == o.STORAGE else None, n_models=2)
    msg = str(e.value)
    assert msg.startswith("custom_executorch_storage = partition: the model partition holds one model") \
        and "names 2" in msg and "custom_executorch_storage = embedded" in msg and "\n" not in msg
