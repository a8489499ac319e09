# tests/pipeline
