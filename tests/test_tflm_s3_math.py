"""benchmarks/tflm/tflm_s3_math.c (the binary64 pieces the S3's TFLM firmware links) against
the host's libm: compiled for the host under other names, every result compared exactly."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "benchmarks" / "tflm" / "tflm_s3_math.c"
RENAME = ("-D__muldf3=t_mul", "-D__fixdfdi=t_fix", "-Dfrexp=t_frexp", "-Dround=t_round",
          "-Droundf=t_roundf")
CHECK = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
double t_mul(double, double); int64_t t_fix(double); double t_frexp(double, int *);
double t_round(double); float t_roundf(float);
int main(void) {
    srand(1);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        double a = (rand() / (double)RAND_MAX - 0.5) * ldexp(1.0, rand() % 60 - 30);
        double b = (rand() / (double)RAND_MAX - 0.5) * ldexp(1.0, rand() % 60 - 30);
        double c = a * 1e6, h = (rand() % 2000 - 1000) / 2.0;
        int e1 = 0, e2 = 0;
        bad += t_mul(a, b) != a * b;
        bad += t_fix(c) != (int64_t)c;
        bad += t_frexp(a, &e1) != frexp(a, &e2) || e1 != e2;
        bad += t_round(c) != round(c) || t_round(h) != round(h);
        bad += t_roundf((float)c) != roundf((float)c) || t_roundf((float)h) != roundf((float)h);
    }
    printf("differ=%d\n", bad);
    return bad != 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs the host's gcc")
def test_s3_math_matches_the_hosts_libm(tmp_path: Path) -> None:
    (tmp_path / "check.c").write_text(CHECK)
    exe = tmp_path / "check"
    subprocess.run(["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1", "-fno-builtin",
                    *RENAME, "-c", str(SRC), "-o", str(tmp_path / "m.o")], check=True)
    subprocess.run(["gcc", "-O1", str(tmp_path / "check.c"), str(tmp_path / "m.o"), "-lm", "-o",
                    str(exe)], check=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert r.stdout.strip() == "differ=0", r.stdout
