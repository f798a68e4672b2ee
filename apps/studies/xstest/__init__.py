"""XSTest: refusal rates per prompt type and model."""
