# tests/encoder
