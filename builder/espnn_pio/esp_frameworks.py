"""Our additions to espressif32's framework scripts (placeholder until the component lands)."""
