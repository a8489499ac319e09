# tests/ebpf
