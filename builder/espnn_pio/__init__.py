"""executorch-espnn's PlatformIO builder helpers (imported by the SCons scripts in builder/)."""
