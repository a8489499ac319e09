# plugins/ebpf
