"""Bare-metal harness for the emulated 32-bit targets (rv32imac and Xtensa lx106 under QEMU)."""
